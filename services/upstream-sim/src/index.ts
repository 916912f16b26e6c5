// In-process use by tests and benchmarks: `const sim = await startSim()`, then point a channel at
// `${sim.url}/ch/<name>` and inject faults with sim.faults.add({...}).
export { startSim, type Sim, type SimOptions, type RequestRecord } from './sim';
export type {
  FaultControl,
  FaultRule,
  StoredFault,
  MalformKind,
  ShapeFault,
  FaultOperation,
  JobFault,
  JobOutcome,
} from './faults';
export type { ProtocolName } from './protocol';
export {
  expectedAnswers,
  usageFor,
  chatReply,
  tokensOf,
  canonicalJson,
  editedImagePng,
  sha256Hex,
  generatedImagePng,
  generatedVideoMp4,
  seedFor,
  IMAGE_SIZES,
  type Answer,
  type Question,
  type EvaluateRequest,
  type EvaluateUsage,
  type ChatReply,
  type ImageSize,
  type GenerationSpec,
} from './deterministic';
export { isVideoModel } from './jobs';
export { SENSITIVE_ERROR as REPLICATE_SENSITIVE_ERROR } from './protocols/replicate';
export { CONTENT_POLICY_MSG as FAL_CONTENT_POLICY_MSG } from './protocols/fal-queue';
export { pngInfo, sniffImageType, type PngInfo } from './png';
export { DEFAULT_REPLICATE_WEBHOOK_SECRET, SIM_FAL_USER_ID, type WebhookAttempt } from './webhooks';
