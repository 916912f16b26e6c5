// The sliding-window suite, once more on a three-primary Redis Cluster (onCluster): the windows of different
// workspaces spread over the primaries, a pair of one workspace shares its slot.
import { onCluster } from '@gensvc/testing';
import './rate-limit.int.test';

onCluster({ minNodes: 2 });
