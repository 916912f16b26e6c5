// The shared subscriber's suite, once more on a three-primary Redis Cluster (onCluster).
import { onCluster } from '@gensvc/testing';
import './pub-sub.int.test';

onCluster();
