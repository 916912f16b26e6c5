// What a file is, decided from its bytes (DESIGN.md §5), its header limits (spec §8), and safe names for it.
export * from './filename';
export * from './limits';
export * from './media-type';
export * from './sniff';
