//! Configuration loading: defaults, then a Java `.properties` file with the same keys as Java's
//! `namesrv.conf` / `broker.conf`, then command-line flags. Validated once, at start-up.
//!
//! Unlike Java, a value that does not parse (`listenPort=10911 ` with a trailing blank, `yes`
//! for a boolean) refuses start-up with a message naming the key instead of being dropped.
//!
//! Owns the typed key machinery (`config_struct!`, value parsing, `ConfigError`) and Java's `tls.*`
//! keys; `meta::config` (broker.conf) and `namesrv::config` (namesrv.conf) declare their keys
//! with it. The command line is `main.rs`'s. May import: `crate::properties` only (a leaf).

use std::path::{Path, PathBuf};

/// A configuration problem; start-up stops with this message.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("config key '{key}': invalid value '{value}' (expected {expected})")]
    InvalidValue { key: String, value: String, expected: &'static str },
    #[error("config key '{key}': {reason}")]
    Refused { key: String, reason: String },
    #[error("unknown config key '{0}'")]
    UnknownKey(String),
}

/// A value type a config key can have.
pub trait ConfigValue: Sized {
    const EXPECTED: &'static str;
    fn parse_value(s: &str) -> Option<Self>;
    fn show(&self) -> String;
}

macro_rules! int_value {
    ($($t:ty),*) => {$(
        impl ConfigValue for $t {
            const EXPECTED: &'static str = concat!("an integer (", stringify!($t), ") with no blanks");
            fn parse_value(s: &str) -> Option<Self> {
                s.parse().ok()
            }
            fn show(&self) -> String {
                self.to_string()
            }
        }
    )*};
}
int_value!(u16, u32, u64, usize, i32, i64);

impl ConfigValue for bool {
    const EXPECTED: &'static str = "true or false";
    fn parse_value(s: &str) -> Option<Self> {
        if s.eq_ignore_ascii_case("true") {
            Some(true)
        } else if s.eq_ignore_ascii_case("false") {
            Some(false)
        } else {
            None
        }
    }
    fn show(&self) -> String {
        self.to_string()
    }
}

impl ConfigValue for String {
    const EXPECTED: &'static str = "a string";
    /// Java trims string values.
    fn parse_value(s: &str) -> Option<Self> {
        Some(s.trim().to_owned())
    }
    fn show(&self) -> String {
        self.clone()
    }
}

impl ConfigValue for PathBuf {
    const EXPECTED: &'static str = "a path";
    fn parse_value(s: &str) -> Option<Self> {
        let s = s.trim();
        (!s.is_empty()).then(|| PathBuf::from(s))
    }
    fn show(&self) -> String {
        self.display().to_string()
    }
}

/// Parses `value` for `key`, or names both in the error.
pub fn parse_value<T: ConfigValue>(key: &str, value: &str) -> Result<T, ConfigError> {
    T::parse_value(value).ok_or_else(|| ConfigError::InvalidValue {
        key: key.to_owned(),
        value: value.to_owned(),
        expected: T::EXPECTED,
    })
}

/// Declares a config struct whose fields map 1:1 to Java config keys:
/// `field: Type = default => "javaKey",`.
macro_rules! config_struct {
    ($(#[$meta:meta])* pub struct $name:ident {
        $($(#[$fmeta:meta])* $field:ident : $ty:ty = $default:expr => $key:literal,)*
        $(@nested $nfield:ident : $nty:ty,)?
    }) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq)]
        pub struct $name {
            $($(#[$fmeta])* pub $field: $ty,)*
            $(pub $nfield: $nty,)?
        }

        impl Default for $name {
            fn default() -> Self {
                Self { $($field: $default,)* $($nfield: <$nty>::default(),)? }
            }
        }

        impl $name {
            /// Every key this struct accepts itself (not those of a nested struct).
            pub const KEYS: &'static [&'static str] = &[$($key),*];

            /// Sets `key`; `Ok(false)` when the key is not one of ours.
            pub fn set(&mut self, key: &str, value: &str) -> Result<bool, $crate::config::ConfigError> {
                match key {
                    $($key => {
                        self.$field = $crate::config::parse_value(key, value)?;
                        Ok(true)
                    })*
                    _ => {
                        $(return self.$nfield.set(key, value);)?
                        #[allow(unreachable_code)]
                        Ok(false)
                    }
                }
            }

            /// `(key, value)` for every key, in declaration order (a nested struct's last).
            pub fn entries(&self) -> Vec<(&'static str, String)> {
                #[allow(unused_mut)]
                let mut all = vec![$(($key, $crate::config::ConfigValue::show(&self.$field)),)*];
                $(all.extend(self.$nfield.entries());)?
                all
            }
        }
    };
}
pub(crate) use config_struct;

config_struct! {
    /// Java's `tls.*` keys (`TlsSystemConfig`), as given (empty = unset); read into
    /// `net::tls::TlsSettings` by [`tls_settings`].
    pub struct TlsKeys {
        server_mode: String = String::new() => "tls.server.mode",
        test_mode_enable: String = String::new() => "tls.test.mode.enable",
        server_need_client_auth: String = String::new() => "tls.server.need.client.auth",
        server_key_path: String = String::new() => "tls.server.keyPath",
        server_key_password: String = String::new() => "tls.server.keyPassword",
        server_cert_path: String = String::new() => "tls.server.certPath",
        server_auth_client: String = String::new() => "tls.server.authClient",
        server_trust_cert_path: String = String::new() => "tls.server.trustCertPath",
        enable: String = String::new() => "tls.enable",
        client_key_path: String = String::new() => "tls.client.keyPath",
        client_key_password: String = String::new() => "tls.client.keyPassword",
        client_cert_path: String = String::new() => "tls.client.certPath",
        client_auth_server: String = String::new() => "tls.client.authServer",
        client_trust_cert_path: String = String::new() => "tls.client.trustCertPath",
        config_file: String = String::new() => "tls.config.file",
    }
}

/// Reads a Java properties file (see [`crate::properties`]).
pub fn read_properties(path: &Path) -> Result<Vec<(String, String)>, ConfigError> {
    crate::properties::read_properties(path).map_err(|source| ConfigError::Io { path: path.to_owned(), source })
}

/// The user's home directory, as Java's `user.home`.
pub fn home_dir() -> PathBuf {
    std::env::var_os("HOME").map_or_else(|| PathBuf::from("."), PathBuf::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_checked_and_named() {
        let err = parse_value::<u16>("listenPort", "10911 ").unwrap_err();
        assert!(err.to_string().contains("listenPort"), "{err}");
        assert!(parse_value::<bool>("x", "yes").is_err());
        assert!(parse_value::<bool>("x", "TRUE").unwrap());
        assert_eq!(parse_value::<String>("x", " a ").unwrap(), "a");
    }
}
