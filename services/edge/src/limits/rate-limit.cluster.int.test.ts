// The sliding-window suite, once more on a three-primary Redis Cluster (onCluster): the windows of different
// workspaces spread over the primaries, a pair of one workspace shares its slot.
import { onCluster } from '@gensvc/testing';
import './rate-limit.int.test';

onCluster({ minNodes: 2 });
// Alone, its slowest case (2,600 takes over two cluster connections) runs in about a second; beside the whole suite
// on a two-core machine it once ran past jest's 30 s. Its assertions are unchanged.
jest.setTimeout(120_000);
