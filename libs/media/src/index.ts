// What a file is, decided from its bytes (a buffer, or a stream's head) (DESIGN.md §5), its header limits (spec §8),
// safe names for it, and the PNG writer.
export * from './digest';
export * from './filename';
export * from './head-peek';
export * from './limits';
export * from './media-type';
export * from './png';
export * from './sniff';
