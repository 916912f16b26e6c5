// What a file is, decided from its bytes (a buffer, or a stream's head) (DESIGN.md §5), its header limits (spec §8),
// and safe names for it.
export * from './digest';
export * from './filename';
export * from './head-peek';
export * from './limits';
export * from './media-type';
export * from './sniff';
