// In-process use by tests and benchmarks: `const sim = await startSim()`, then point a channel at
// `${sim.url}/ch/<name>` and inject faults with sim.faults.add({...}).
export { startSim, type Sim, type SimOptions, type RequestRecord } from './sim';
export type { FaultControl, FaultRule, StoredFault, MalformKind, ShapeFault } from './faults';
export type { ProtocolName } from './protocol';
export {
  expectedAnswers,
  usageFor,
  chatReply,
  tokensOf,
  canonicalJson,
  editedImagePng,
  sha256Hex,
  IMAGE_SIZES,
  type Answer,
  type Question,
  type EvaluateRequest,
  type EvaluateUsage,
  type ChatReply,
  type ImageSize,
} from './deterministic';
export { pngInfo, sniffImageType, type PngInfo } from './png';
