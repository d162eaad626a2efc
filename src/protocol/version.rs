//! `MQVersion.Version` ordinals, the `version` field of every command: what clients and
//! brokers of each release are known to send or understand. Owns these numbers only; the rules
//! that compare against them stay with their handlers.
//!
//! May import: nothing outside `protocol/` (the area's rule: docs/architecture.md).

/// Brokers from here on send the full REGISTER_BROKER body.
pub const V3_0_11: i32 = 37;
/// The send header's maxReconsumeTimes (and the send-back's) is honoured from here on.
pub const V3_4_9: i32 = 121;
/// Clients up to here did not sign `_UNIQUE_KEY_QUERY` (ACL).
pub const V4_9_3: i32 = 400;
/// Clients from here on read route data as standard JSON (quoted numeric keys).
pub const V4_9_4: i32 = 401;
/// Clients from here on know INVALID_PARAMETER; compressed registration bodies carry the
/// queue-mapping section.
pub const V5_0_0: i32 = 413;
/// What ferrocket reports in every command it creates.
pub const V5_3_3: i32 = 479;
