//! The remoting frame (`NettyDecoder` / `NettyEncoder`) and its tokio-util codec.
//!
//! ```text
//! frame = length:i32 headerWord:i32 header[headerLen] body[length - 4 - headerLen]
//!         headerWord = serializeType:u8 (bits 31..24) | headerLen (bits 23..0)
//! ```
//!
//! `length` does not count itself. The size limit applies to `length + 4` (Netty's
//! `LengthFieldBasedFrameDecoder` with `maxFrameLength` 16 MiB) and is checked before any
//! buffer is reserved, so a hostile length costs nothing.
//!
//! May import: nothing outside `protocol/` (the area's rule: docs/architecture.md).

use bytes::{Buf, BufMut, BytesMut};
use nom::bytes::streaming::take;
use nom::number::streaming::be_u32;
use tokio_util::codec::{Decoder, Encoder};

use super::command::{RemotingCommand, SerializeType};
use super::{header_binary, header_json, ProtocolError};

/// Java's `com.rocketmq.remoting.frameMaxLength` default.
pub const DEFAULT_MAX_FRAME: usize = 16 * 1024 * 1024;

/// Limits applied while decoding.
#[derive(Clone, Copy, Debug)]
pub struct FrameLimits {
    /// Largest whole frame (length field included), in bytes.
    pub max_frame: usize,
}

impl Default for FrameLimits {
    fn default() -> Self {
        Self { max_frame: DEFAULT_MAX_FRAME }
    }
}

/// The parts of one frame, borrowed from the input.
#[derive(Debug, PartialEq)]
pub struct RawFrame<'a> {
    pub serialize_type: u8,
    pub header: &'a [u8],
    pub body: &'a [u8],
}

/// Splits one frame off `input`: `Ok(None)` when more bytes are needed, otherwise the frame and
/// the number of bytes it used. Never allocates.
pub fn parse_frame(input: &[u8], limits: FrameLimits) -> Result<Option<(RawFrame<'_>, usize)>, ProtocolError> {
    let Ok((rest, length)) = be_u32::<_, nom::error::Error<&[u8]>>(input) else {
        return Ok(None);
    };
    let length = check_length(length, limits)?;
    let frame: nom::IResult<&[u8], &[u8]> = take(length)(rest);
    let Ok((_, frame)) = frame else {
        return Ok(None);
    };
    let (header_and_body, word) = be_u32::<_, nom::error::Error<&[u8]>>(frame)
        .map_err(|_| ProtocolError::BadFrame("frame shorter than its header-length word".into()))?;
    let serialize_type = (word >> 24) as u8;
    let header_len = (word & 0x00FF_FFFF) as usize;
    if header_len > header_and_body.len() {
        return Err(ProtocolError::BadFrame(format!("header length {header_len} exceeds frame length {length}")));
    }
    let (header, body) = header_and_body.split_at(header_len);
    Ok(Some((RawFrame { serialize_type, header, body }, 4 + length)))
}

/// Validates the length field: at least the header word, and the whole frame within the limit.
fn check_length(length: u32, limits: FrameLimits) -> Result<usize, ProtocolError> {
    if length > i32::MAX as u32 {
        return Err(ProtocolError::BadFrame(format!("negative frame length {}", length as i32)));
    }
    let length = length as usize;
    if length < 4 {
        return Err(ProtocolError::BadFrame(format!("frame length {length} is below 4")));
    }
    if length + 4 > limits.max_frame {
        return Err(ProtocolError::FrameTooLarge { size: length + 4, max: limits.max_frame });
    }
    Ok(length)
}

/// Decodes the header bytes according to the frame's serialize type.
pub fn decode_header(serialize_type: u8, header: &[u8]) -> Result<RemotingCommand, ProtocolError> {
    match SerializeType::from_byte(serialize_type) {
        Some(SerializeType::Json) => header_json::decode(header),
        Some(SerializeType::RocketMq) => header_binary::decode(header),
        None => Err(ProtocolError::UnknownSerializeType(serialize_type)),
    }
}

/// Encodes everything of `cmd`'s frame but the body: length, header word and header.
pub fn encode_head(cmd: &RemotingCommand, dst: &mut BytesMut) {
    thread_local! {
        /// The header is encoded here first (its length goes before it): no allocation per frame.
        static HEADER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    HEADER.with_borrow_mut(|header| {
        header.clear();
        match cmd.serialize_type {
            SerializeType::Json => header_json::encode(cmd, header),
            SerializeType::RocketMq => header_binary::encode(cmd, header),
        }
        let length = 4 + header.len() + cmd.body_len();
        dst.reserve(8 + header.len());
        dst.put_u32(length as u32);
        dst.put_u32((u32::from(cmd.serialize_type.as_byte()) << 24) | (header.len() as u32 & 0x00FF_FFFF));
        dst.put_slice(header);
        if header.capacity() > 64 << 10 {
            // A huge header (a big remark) does not keep its buffer.
            *header = Vec::new();
        }
    });
}

/// Encodes `cmd` as a whole frame (body copied), its header in `cmd.serialize_type`.
pub fn encode_frame(cmd: &RemotingCommand, dst: &mut BytesMut) {
    encode_head(cmd, dst);
    dst.reserve(cmd.body_len());
    dst.put_slice(&cmd.body);
    for part in &cmd.body_parts {
        dst.put_slice(part);
    }
}

/// tokio-util codec: frames in, commands out (and back).
#[derive(Clone, Debug, Default)]
pub struct RemotingCodec {
    limits: FrameLimits,
}

impl RemotingCodec {
    pub fn new(limits: FrameLimits) -> Self {
        Self { limits }
    }
}

impl Decoder for RemotingCodec {
    type Item = RemotingCommand;
    type Error = ProtocolError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<RemotingCommand>, ProtocolError> {
        if src.len() < 4 {
            return Ok(None);
        }
        let length = check_length(u32::from_be_bytes([src[0], src[1], src[2], src[3]]), self.limits)?;
        if src.len() < 4 + length {
            // Reserve only now that the length is known to be within the limit.
            src.reserve(4 + length - src.len());
            return Ok(None);
        }
        let (ser, header_len) = match parse_frame(&src[..4 + length], self.limits)? {
            Some((raw, _)) => (raw.serialize_type, raw.header.len()),
            None => return Ok(None),
        };
        let mut frame = src.split_to(4 + length);
        frame.advance(8);
        let header = frame.split_to(header_len);
        let mut cmd = decode_header(ser, &header)?;
        cmd.body = frame.freeze();
        Ok(Some(cmd))
    }
}

impl Encoder<RemotingCommand> for RemotingCodec {
    type Error = ProtocolError;

    fn encode(&mut self, cmd: RemotingCommand, dst: &mut BytesMut) -> Result<(), ProtocolError> {
        encode_frame(&cmd, dst);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::command::{ExtKey, LanguageCode};

    fn sample(ser: SerializeType) -> RemotingCommand {
        RemotingCommand {
            code: 105,
            language: LanguageCode::JAVA,
            version: 479,
            opaque: 3,
            flag: 0,
            remark: None,
            ext_fields: [(ExtKey::from("topic"), "T".to_string())].into(),
            body: bytes::Bytes::from_static(b"body!"),
            body_parts: Vec::new(),
            serialize_type: ser,
        }
    }

    #[test]
    fn round_trip_both_serializations() {
        for ser in [SerializeType::Json, SerializeType::RocketMq] {
            let mut buf = BytesMut::new();
            encode_frame(&sample(ser), &mut buf);
            let mut codec = RemotingCodec::default();
            assert_eq!(codec.decode(&mut buf).unwrap(), Some(sample(ser)));
            assert!(buf.is_empty());
        }
    }

    #[test]
    fn every_prefix_needs_more_bytes() {
        let mut full = BytesMut::new();
        encode_frame(&sample(SerializeType::Json), &mut full);
        for n in 0..full.len() {
            let mut part = BytesMut::from(&full[..n]);
            assert_eq!(RemotingCodec::default().decode(&mut part).unwrap(), None, "prefix {n}");
        }
    }

    #[test]
    fn hostile_lengths_fail_before_allocating() {
        let mut codec = RemotingCodec::default();
        for len in [0u32, 3, 0x8000_0000, 0x7FFF_FFFF, 16 * 1024 * 1024] {
            let mut buf = BytesMut::from(&len.to_be_bytes()[..]);
            assert!(codec.decode(&mut buf).is_err(), "length {len:#x} accepted");
            assert!(buf.capacity() < 1024);
        }
    }

    #[test]
    fn header_longer_than_frame_and_unknown_type_fail() {
        let frame = [0, 0, 0, 6, 0, 0, 0, 9, b'{', b'}'];
        assert!(RemotingCodec::default().decode(&mut BytesMut::from(&frame[..])).is_err());
        let frame = [0, 0, 0, 6, 7, 0, 0, 2, b'{', b'}'];
        assert!(matches!(
            RemotingCodec::default().decode(&mut BytesMut::from(&frame[..])),
            Err(ProtocolError::UnknownSerializeType(7))
        ));
    }

    fn arb_command() -> impl proptest::strategy::Strategy<Value = RemotingCommand> {
        use proptest::prelude::*;
        (
            any::<i16>(),
            0u8..14,
            any::<i16>(),
            any::<i32>(),
            0i32..4,
            proptest::option::of("[^\\u{0}]{1,20}"),
            proptest::collection::btree_map("[a-zA-Z_]{1,8}", ".{1,16}", 0..6),
            proptest::collection::vec(any::<u8>(), 0..64),
            any::<bool>(),
        )
            .prop_map(|(code, lang, version, opaque, flag, remark, ext, body, binary)| RemotingCommand {
                code: code.into(),
                language: LanguageCode(lang),
                version: version.into(),
                opaque,
                flag,
                remark,
                ext_fields: ext.into_iter().map(|(k, v): (String, String)| (k.into(), v)).collect(),
                body: body.into(),
                body_parts: Vec::new(),
                serialize_type: if binary { SerializeType::RocketMq } else { SerializeType::Json },
            })
    }

    proptest::proptest! {
        #[test]
        fn any_command_round_trips(cmd in arb_command()) {
            let mut buf = BytesMut::new();
            encode_frame(&cmd, &mut buf);
            let back = RemotingCodec::default().decode(&mut buf).unwrap();
            proptest::prop_assert_eq!(back, Some(cmd));
        }

        #[test]
        fn arbitrary_bytes_never_panic(data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..256)) {
            let mut buf = BytesMut::from(&data[..]);
            let mut codec = RemotingCodec::new(FrameLimits { max_frame: 4096 });
            while let Ok(Some(_)) = codec.decode(&mut buf) {}
        }
    }
}
