// The worker-health suite, once more on a three-primary Redis Cluster (onCluster).
import { onCluster } from '@gensvc/testing';
import './worker-health.int.test';

onCluster();
