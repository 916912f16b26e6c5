// Paid calls' budget leases across two edges, once more on a three-primary Redis Cluster (onCluster): lease
// returns travel by pub/sub, the rate-limit windows of the suite's workspaces by hash-tagged keys.
import { onCluster } from '@gensvc/testing';
import './budget-leases.int.test';

onCluster();
