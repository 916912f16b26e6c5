// The admin CLI's lifecycle suite, once more on a three-primary Redis Cluster (onCluster): its invalidations reach
// subscribed replicas, and `channel list` reads the shared breaker state there.
import { onCluster } from '@gensvc/testing';
import './lifecycle.int.test';

onCluster();
