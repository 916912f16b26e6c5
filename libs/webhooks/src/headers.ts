// Request headers of a task callback (spec section 6). Receivers match names case-insensitively, as HTTP requires;
// these spellings are what the dispatcher sends.

/** `t=<unix seconds>,v1=<hex>[,v1=<hex>...]`: signs the timestamp and the raw body, not the other headers. */
export const SIGNATURE_HEADER = 'SVC-Signature';
/** The task the callback is about. Not signed: the envelope's `task_id` is the authoritative copy. */
export const TASK_ID_HEADER = 'SVC-Task-Id';
/** Unique per attempt and deterministic from (task, attempt): see deliveryIdFor. Not signed. */
export const DELIVERY_ID_HEADER = 'SVC-Delivery-Id';
