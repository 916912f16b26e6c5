// The sweeper suite, once more on a three-primary Redis Cluster (onCluster).
import { onCluster } from '@gensvc/testing';
import './sweeper.int.test';

onCluster();
