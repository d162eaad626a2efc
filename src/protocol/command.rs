//! The command object every frame carries (`RemotingCommand.java`).
//!
//! ```text
//! code      request code, or response code in a response
//! language  sender's LanguageCode          version  sender's MQVersion ordinal
//! opaque    request id, echoed by the response
//! flag      bit 0 = response, bit 1 = oneway request
//! remark    optional error text            extFields  string -> string ("custom header")
//! body      raw bytes outside the header
//! ```
//!
//! May import: nothing outside `protocol/` (the area's rule: docs/architecture.md).

use bytes::Bytes;

use super::code::{RequestCode, ResponseCode};

pub use super::ext_fields::{ext_key, ext_key_cow, ext_key_owned, ExtFields, ExtKey};

/// `RemotingCommand.RPC_TYPE`: set on responses.
pub const FLAG_RESPONSE: i32 = 0x1;
/// `RemotingCommand.RPC_ONEWAY`: the receiver must not answer.
pub const FLAG_ONEWAY: i32 = 0x2;

/// The version ferrocket reports in every command it creates: `MQVersion.Version.V5_3_3`.
/// Clients gate features on the broker's version (SQL92 filtering needs >= 232).
pub const CURRENT_VERSION: i32 = super::version::V5_3_3;

/// Header serialization (`SerializeType.java`): the top byte of the header-length word.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SerializeType {
    #[default]
    Json,
    RocketMq,
}

impl SerializeType {
    pub fn from_byte(b: u8) -> Option<Self> {
        match b {
            0 => Some(Self::Json),
            1 => Some(Self::RocketMq),
            _ => None,
        }
    }

    pub fn as_byte(self) -> u8 {
        match self {
            Self::Json => 0,
            Self::RocketMq => 1,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Json => "JSON",
            Self::RocketMq => "ROCKETMQ",
        }
    }
}

/// `LanguageCode.java`: a byte in binary headers, the enum name in JSON headers.
/// Kept as the raw byte so unknown values survive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct LanguageCode(pub u8);

const LANGUAGE_NAMES: [&str; 14] = [
    "JAVA", "CPP", "DOTNET", "PYTHON", "DELPHI", "ERLANG", "RUBY", "OTHER", "HTTP", "GO", "PHP", "OMS", "RUST",
    "NODE_JS",
];

impl LanguageCode {
    pub const JAVA: Self = Self(0);
    pub const OTHER: Self = Self(7);
    pub const GO: Self = Self(9);
    pub const RUST: Self = Self(12);

    /// The enum name; `OTHER` for bytes Java would not know.
    pub fn name(self) -> &'static str {
        LANGUAGE_NAMES.get(usize::from(self.0)).copied().unwrap_or("OTHER")
    }

    /// Parses an enum name; unknown names map to `OTHER` (Java and Go both tolerate them).
    pub fn from_name(name: &str) -> Self {
        LANGUAGE_NAMES.iter().position(|n| *n == name).and_then(|i| u8::try_from(i).ok()).map_or(Self::OTHER, Self)
    }
}

/// One request or response.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct RemotingCommand {
    pub code: i32,
    pub language: LanguageCode,
    pub version: i32,
    pub opaque: i32,
    pub flag: i32,
    pub remark: Option<String>,
    pub ext_fields: ExtFields,
    pub body: Bytes,
    /// More body bytes, sent after `body` without being copied (e.g. stored records straight
    /// from the mapped CommitLog). Always empty on decoded commands.
    pub body_parts: Vec<Bytes>,
    /// How the header was (or will be) serialized.
    pub serialize_type: SerializeType,
}

impl RemotingCommand {
    /// A request with ferrocket's identity; the opaque is set by the sender.
    pub fn request(code: RequestCode) -> Self {
        Self { code: code.0, language: LanguageCode::JAVA, version: CURRENT_VERSION, ..Self::default() }
    }

    /// A response to `req`: same opaque and header serialization, response flag set.
    ///
    /// Responses say `JAVA` as their language: some non-Java clients parse the name into an enum
    /// and fail on anything they do not know.
    pub fn response_to(req: &RemotingCommand, code: ResponseCode) -> Self {
        Self {
            code: code.0,
            language: LanguageCode::JAVA,
            version: CURRENT_VERSION,
            opaque: req.opaque,
            flag: FLAG_RESPONSE,
            serialize_type: req.serialize_type,
            ..Self::default()
        }
    }

    /// A response carrying an error `remark`.
    pub fn error_response(req: &RemotingCommand, code: ResponseCode, remark: impl Into<String>) -> Self {
        Self::response_to(req, code).with_remark(remark)
    }

    pub fn with_remark(mut self, remark: impl Into<String>) -> Self {
        self.remark = Some(remark.into());
        self
    }

    pub fn with_body(mut self, body: impl Into<Bytes>) -> Self {
        self.body = body.into();
        self
    }

    /// Length of the whole body, parts included.
    pub fn body_len(&self) -> usize {
        self.body.len() + self.body_parts.iter().map(Bytes::len).sum::<usize>()
    }

    pub fn with_ext(mut self, key: &str, value: impl Into<String>) -> Self {
        self.ext_fields.insert(ext_key(key), value.into());
        self
    }

    pub fn request_code(&self) -> RequestCode {
        RequestCode(self.code)
    }

    pub fn response_code(&self) -> ResponseCode {
        ResponseCode(self.code)
    }

    pub fn is_response(&self) -> bool {
        self.flag & FLAG_RESPONSE != 0
    }

    pub fn is_oneway(&self) -> bool {
        self.flag & FLAG_ONEWAY != 0
    }

    pub fn mark_oneway(&mut self) {
        self.flag |= FLAG_ONEWAY;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn language_names_round_trip_and_tolerate_unknown() {
        assert_eq!(LanguageCode::from_name("GO"), LanguageCode::GO);
        assert_eq!(LanguageCode::RUST.name(), "RUST");
        assert_eq!(LanguageCode::from_name("COBOL"), LanguageCode::OTHER);
        assert_eq!(LanguageCode(200).name(), "OTHER");
    }

    #[test]
    fn response_copies_opaque_and_serialization() {
        let mut req = RemotingCommand::request(RequestCode::GET_ROUTEINFO_BY_TOPIC);
        req.opaque = 42;
        req.serialize_type = SerializeType::RocketMq;
        let resp = RemotingCommand::response_to(&req, ResponseCode::SUCCESS);
        assert_eq!(resp.opaque, 42);
        assert!(resp.is_response());
        assert!(!resp.is_oneway());
        assert_eq!(resp.serialize_type, SerializeType::RocketMq);
    }
}
