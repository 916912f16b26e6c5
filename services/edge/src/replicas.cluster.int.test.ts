// Two edges' key caches kept fresh by invalidations, once more on a three-primary Redis Cluster (onCluster): each
// edge's one subscriber connection is a Cluster's.
import { onCluster } from '@gensvc/testing';
import './replicas.int.test';

onCluster();
