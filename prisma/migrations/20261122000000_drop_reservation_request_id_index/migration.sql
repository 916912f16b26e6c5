-- Reservation.requestId was indexed for look-ups nothing makes: the index cost a write on every reserve. Support
-- finds a charge by request id through LedgerEntry_requestId_idx, which stays.
DROP INDEX "Reservation_requestId_idx";
