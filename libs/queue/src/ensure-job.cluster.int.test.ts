// The ensure-job suite, once more on a three-primary Redis Cluster (onCluster).
import { onCluster } from '@gensvc/testing';
import './ensure-job.int.test';

onCluster({ minNodes: 1 });
