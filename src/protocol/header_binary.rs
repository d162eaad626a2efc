//! ROCKETMQ binary header (serialize type 1), `RocketMQSerializable.rocketMQProtocolEncode`.
//!
//! ```text
//! header  = code:i16 language:u8 version:i16 opaque:i32 flag:i32
//!           remarkLen:i32 remark[remarkLen] extLen:i32 ext[extLen]
//! ext     = *( keyLen:i16 key[keyLen] valueLen:i32 value[valueLen] )
//! ```
//!
//! A zero-length string decodes as absent (Java reads it as `null`), so entries with an empty key
//! or value are dropped. Any length that runs past the header is an error.
//!
//! May import: nothing outside `protocol/` (the area's rule: docs/architecture.md).

use nom::bytes::complete::take;
use nom::number::complete::{be_i16, be_i32, u8 as byte};
use nom::IResult;

use super::command::{ExtFields, LanguageCode, RemotingCommand, SerializeType};
use super::ProtocolError;

/// Decodes a binary header into a command with an empty body.
pub fn decode(header: &[u8]) -> Result<RemotingCommand, ProtocolError> {
    match parse_header(header) {
        Ok(([], cmd)) => Ok(cmd),
        Ok((rest, _)) => {
            Err(ProtocolError::BadBinaryHeader(format!("{} trailing bytes after the ext block", rest.len())))
        }
        Err(e) => Err(ProtocolError::BadBinaryHeader(format!("{e:?}"))),
    }
}

/// `header` rule of the grammar above.
fn parse_header(i: &[u8]) -> IResult<&[u8], RemotingCommand> {
    let (i, code) = be_i16(i)?;
    let (i, language) = byte(i)?;
    let (i, version) = be_i16(i)?;
    let (i, opaque) = be_i32(i)?;
    let (i, flag) = be_i32(i)?;
    let (i, remark) = i32_prefixed(i)?;
    let (i, ext_block) = i32_prefixed(i)?;
    let (_, ext_fields) = parse_ext(ext_block)?;
    Ok((
        i,
        RemotingCommand {
            code: i32::from(code),
            language: LanguageCode(language),
            version: i32::from(version),
            opaque,
            flag,
            remark: non_empty(remark),
            ext_fields,
            body: Default::default(),
            body_parts: Vec::new(),
            serialize_type: SerializeType::RocketMq,
        },
    ))
}

/// `ext` rule: entries until the block is consumed.
fn parse_ext(mut i: &[u8]) -> IResult<&[u8], ExtFields> {
    let mut pairs = Vec::new();
    while !i.is_empty() {
        let (rest, key_len) = be_i16(i)?;
        let key_len = usize::try_from(key_len).map_err(|_| failure(rest))?;
        let (rest, key) = take(key_len)(rest)?;
        let (rest, value) = i32_prefixed(rest)?;
        if let (Some(k), Some(v)) = (non_empty(key), non_empty(value)) {
            pairs.push((super::command::ext_key_owned(k), v));
        }
        i = rest;
    }
    // Built once (a repeated key keeps its last value): no shifting insert per entry.
    Ok((i, ExtFields::from_pairs(pairs)))
}

fn i32_prefixed(i: &[u8]) -> IResult<&[u8], &[u8]> {
    let (i, len) = be_i32(i)?;
    let len = usize::try_from(len).map_err(|_| failure(i))?;
    take(len)(i)
}

fn failure(i: &[u8]) -> nom::Err<nom::error::Error<&[u8]>> {
    nom::Err::Failure(nom::error::Error::new(i, nom::error::ErrorKind::Verify))
}

fn non_empty(b: &[u8]) -> Option<String> {
    (!b.is_empty()).then(|| String::from_utf8_lossy(b).into_owned())
}

/// Encodes the header of `cmd`. Codes and versions are written as `i16`, as Java does.
pub fn encode(cmd: &RemotingCommand, out: &mut Vec<u8>) {
    out.extend_from_slice(&(cmd.code as i16).to_be_bytes());
    out.push(cmd.language.0);
    out.extend_from_slice(&(cmd.version as i16).to_be_bytes());
    out.extend_from_slice(&cmd.opaque.to_be_bytes());
    out.extend_from_slice(&cmd.flag.to_be_bytes());
    let remark = cmd.remark.as_deref().unwrap_or("").as_bytes();
    out.extend_from_slice(&len_i32(remark.len()).to_be_bytes());
    out.extend_from_slice(remark);
    let len_pos = out.len();
    out.extend_from_slice(&[0; 4]);
    for (k, v) in &cmd.ext_fields {
        // Keys longer than an i16 cannot be carried; Java would write garbage. Skip them.
        let Ok(klen) = i16::try_from(k.len()) else { continue };
        out.extend_from_slice(&klen.to_be_bytes());
        out.extend_from_slice(k.as_bytes());
        out.extend_from_slice(&len_i32(v.len()).to_be_bytes());
        out.extend_from_slice(v.as_bytes());
    }
    let ext_len = len_i32(out.len() - len_pos - 4);
    out[len_pos..len_pos + 4].copy_from_slice(&ext_len.to_be_bytes());
}

fn len_i32(n: usize) -> i32 {
    // Frames are limited far below 2 GiB, so this never saturates in practice.
    i32::try_from(n).unwrap_or(i32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::command::ExtKey;

    fn sample() -> RemotingCommand {
        RemotingCommand {
            code: 105,
            language: LanguageCode::GO,
            version: 317,
            opaque: 9,
            flag: 0,
            remark: Some("hi".into()),
            ext_fields: [(ExtKey::from("topic"), "TopicTest".to_string())].into(),
            body: Default::default(),
            body_parts: Vec::new(),
            serialize_type: SerializeType::RocketMq,
        }
    }

    #[test]
    fn round_trip() {
        let mut out = Vec::new();
        encode(&sample(), &mut out);
        assert_eq!(out.len(), 21 + 2 + 2 + 5 + 4 + 9);
        assert_eq!(decode(&out).unwrap(), sample());
    }

    #[test]
    fn every_truncated_prefix_is_an_error() {
        let mut out = Vec::new();
        encode(&sample(), &mut out);
        for n in 0..out.len() {
            assert!(decode(&out[..n]).is_err(), "prefix of {n} bytes decoded");
        }
    }

    #[test]
    fn negative_and_oversized_lengths_are_errors() {
        let mut out = Vec::new();
        encode(&sample(), &mut out);
        let mut bad = out.clone();
        bad[13..17].copy_from_slice(&(-1i32).to_be_bytes());
        assert!(decode(&bad).is_err());
        let mut bad = out;
        bad[13..17].copy_from_slice(&i32::MAX.to_be_bytes());
        assert!(decode(&bad).is_err());
    }

    #[test]
    fn empty_strings_read_as_absent() {
        let mut cmd = sample();
        cmd.remark = None;
        cmd.ext_fields.insert("empty".into(), String::new());
        let mut out = Vec::new();
        encode(&cmd, &mut out);
        let back = decode(&out).unwrap();
        assert_eq!(back.remark, None);
        assert!(!back.ext_fields.contains_key("empty"));
    }
}
