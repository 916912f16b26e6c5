// The worker suite, once more on a three-primary Redis Cluster (onCluster).
import { onCluster } from '@gensvc/testing';
import './worker.int.test';

onCluster({ minNodes: 1 });
