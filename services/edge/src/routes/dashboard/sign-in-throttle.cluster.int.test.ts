// The sign-in throttle's suite, once more on a three-primary Redis Cluster (onCluster): an account's and an
// address's counts sit in different slots.
import { onCluster } from '@gensvc/testing';
import './sign-in-throttle.int.test';

onCluster({ minNodes: 2 });
