// The sliding-window suite, once more on a three-primary Redis Cluster (onCluster): the windows of different
// workspaces spread over the primaries, a pair of one workspace shares its slot.
import { onCluster } from '@gensvc/testing';
import './rate-limit.int.test';

onCluster({ minNodes: 2 });
// Its slowest case (2,600 takes over two cluster connections) takes about a second alone, and can pass jest's 30 s
// beside the whole suite on a two-core machine: the cluster's hops wait for a core.
jest.setTimeout(120_000);
