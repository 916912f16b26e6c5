// The producers suite, once more on a three-primary Redis Cluster (onCluster).
import { onCluster } from '@gensvc/testing';
import './producers.int.test';

onCluster({ minNodes: 1 });
