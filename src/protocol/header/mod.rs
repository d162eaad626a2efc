//! Typed ext-field headers, one struct per Java `CommandCustomHeader` class, grouped by feature.
//!
//! Field keys are the Java field names. Reading follows
//! `RemotingCommand.decodeCommandCustomHeader`: unknown keys are ignored, values are trimmed,
//! booleans read as `Boolean.parseBoolean` does (only a case-insensitive "true" is true, so a Go
//! client's "1" is false, without error). Unlike Java, a missing required field or an unparsable
//! number is reported as a [`HeaderError`] naming the field, instead of a later
//! NullPointerException.
//!
//! May import: nothing outside `protocol/` (the area's rule: docs/architecture.md).

pub mod acl;
pub mod broker;
pub mod namesrv;
pub mod pop;
pub mod stats;

use super::command::ExtFields;

/// A header field that is missing or cannot be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    #[error("the custom field <{0}> is null")]
    Missing(&'static str),
    #[error("the custom field <{field}> has an invalid value '{value}'")]
    Invalid { field: &'static str, value: String },
}

/// A typed view of a command's ext fields.
pub trait CommandHeader: Sized {
    fn decode(ext: &ExtFields) -> Result<Self, HeaderError>;
    fn encode(&self, ext: &mut ExtFields);

    fn to_ext(&self) -> ExtFields {
        let mut ext = ExtFields::new();
        self.encode(&mut ext);
        ext
    }
}

/// How one field type is read from and written to ext fields.
pub trait HeaderValue: Sized {
    fn read(ext: &ExtFields, key: &'static str) -> Result<Self, HeaderError>;
    fn write(&self, ext: &mut ExtFields, key: &'static str);
}

fn raw<'a>(ext: &'a ExtFields, key: &str) -> Option<&'a str> {
    ext.get(key).map(|s| s.trim())
}

/// Scalars parsed from their decimal/text form.
trait Scalar: Sized + ToString {
    fn parse(s: &str) -> Option<Self>;
}

macro_rules! int_scalar {
    ($($t:ty),*) => {$(
        impl Scalar for $t {
            fn parse(s: &str) -> Option<Self> {
                s.parse().ok()
            }
        }
    )*};
}
int_scalar!(i32, i64, u32, u64);

impl Scalar for bool {
    fn parse(s: &str) -> Option<Self> {
        Some(s.eq_ignore_ascii_case("true"))
    }
}

impl<T: Scalar> HeaderValue for Option<T> {
    fn read(ext: &ExtFields, key: &'static str) -> Result<Self, HeaderError> {
        match raw(ext, key) {
            None | Some("") | Some("null") => Ok(None),
            Some(v) => T::parse(v).map(Some).ok_or_else(|| HeaderError::Invalid { field: key, value: v.to_owned() }),
        }
    }

    fn write(&self, ext: &mut ExtFields, key: &'static str) {
        if let Some(v) = self {
            ext.insert(key.into(), v.to_string());
        }
    }
}

macro_rules! required_scalar {
    ($($t:ty),*) => {$(
        impl HeaderValue for $t {
            fn read(ext: &ExtFields, key: &'static str) -> Result<Self, HeaderError> {
                <Option<$t>>::read(ext, key)?.ok_or(HeaderError::Missing(key))
            }

            fn write(&self, ext: &mut ExtFields, key: &'static str) {
                ext.insert(key.into(), self.to_string());
            }
        }
    )*};
}
required_scalar!(i32, i64, u32, u64);

/// A Java primitive `boolean`: absent reads as `false`.
impl HeaderValue for bool {
    fn read(ext: &ExtFields, key: &'static str) -> Result<Self, HeaderError> {
        Ok(<Option<bool>>::read(ext, key)?.unwrap_or(false))
    }

    fn write(&self, ext: &mut ExtFields, key: &'static str) {
        ext.insert(key.into(), self.to_string());
    }
}

impl HeaderValue for String {
    fn read(ext: &ExtFields, key: &'static str) -> Result<Self, HeaderError> {
        match raw(ext, key) {
            Some(v) if !v.is_empty() => Ok(v.to_owned()),
            _ => Err(HeaderError::Missing(key)),
        }
    }

    fn write(&self, ext: &mut ExtFields, key: &'static str) {
        ext.insert(key.into(), self.clone());
    }
}

impl HeaderValue for Option<String> {
    fn read(ext: &ExtFields, key: &'static str) -> Result<Self, HeaderError> {
        Ok(raw(ext, key).filter(|v| !v.is_empty()).map(str::to_owned))
    }

    fn write(&self, ext: &mut ExtFields, key: &'static str) {
        if let Some(v) = self {
            ext.insert(key.into(), v.clone());
        }
    }
}

/// Declares a header struct: `field: Type = "javaFieldName"`. `String`/numbers are required,
/// `Option<_>` optional, `bool` a Java primitive (absent = false).
macro_rules! command_header {
    ($(#[$meta:meta])* pub struct $name:ident { $($(#[$fmeta:meta])* $field:ident : $ty:ty = $key:literal,)* }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Default, PartialEq)]
        pub struct $name {
            $($(#[$fmeta])* pub $field: $ty,)*
        }

        impl $crate::protocol::header::CommandHeader for $name {
            fn decode(ext: &$crate::protocol::command::ExtFields) -> Result<Self, $crate::protocol::header::HeaderError> {
                Ok(Self {
                    $($field: <$ty as $crate::protocol::header::HeaderValue>::read(ext, $key)?,)*
                })
            }

            fn encode(&self, ext: &mut $crate::protocol::command::ExtFields) {
                $($crate::protocol::header::HeaderValue::write(&self.$field, ext, $key);)*
            }
        }
    };
}
pub(crate) use command_header;

#[cfg(test)]
mod tests {
    use super::*;

    command_header! {
        pub struct Sample {
            topic: String = "topic",
            queue_id: i32 = "queueId",
            offset: Option<i64> = "offset",
            flag: bool = "flag",
        }
    }

    fn ext(pairs: &[(&str, &str)]) -> ExtFields {
        pairs.iter().map(|(k, v)| (k.to_string().into(), v.to_string())).collect()
    }

    #[test]
    fn decodes_and_round_trips() {
        let h = Sample::decode(&ext(&[("topic", "T"), ("queueId", " 3 "), ("flag", "TRUE"), ("x", "y")])).unwrap();
        assert_eq!(h, Sample { topic: "T".into(), queue_id: 3, offset: None, flag: true });
        assert_eq!(Sample::decode(&h.to_ext()).unwrap(), h);
    }

    #[test]
    fn names_the_missing_or_invalid_field() {
        assert_eq!(Sample::decode(&ext(&[("queueId", "1")])), Err(HeaderError::Missing("topic")));
        let err = Sample::decode(&ext(&[("topic", "T"), ("queueId", "x1")])).unwrap_err();
        assert_eq!(err.to_string(), "the custom field <queueId> has an invalid value 'x1'");
    }

    #[test]
    fn booleans_read_like_java() {
        let h = Sample::decode(&ext(&[("topic", "T"), ("queueId", "1"), ("flag", "1")])).unwrap();
        assert!(!h.flag);
    }
}
