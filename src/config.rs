//! Configuration loading: defaults, then a Java `.properties` file with the same keys as Java's
//! `namesrv.conf` / `broker.conf`, then command-line flags. Validated once, at start-up.
//!
//! Unlike Java, a value that does not parse (`listenPort=10911 ` with a trailing blank, `yes`
//! for a boolean) refuses start-up with a message naming the key instead of being dropped.

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
    /// `remoting::tls::TlsSettings` by [`tls_settings`].
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

/// Reads a Java properties file.
pub fn read_properties(path: &Path) -> Result<Vec<(String, String)>, ConfigError> {
    let bytes = std::fs::read(path).map_err(|source| ConfigError::Io { path: path.to_owned(), source })?;
    Ok(parse_properties(&bytes))
}

/// Parses Java `.properties` text (`java.util.Properties.load`): ISO-8859-1 bytes; `#`/`!`
/// comments; `key=value`, `key:value` or `key value`; `\` line continuation; `\uXXXX` and
/// `\t \n \r \f` escapes. Leading blanks of a value are dropped, trailing blanks kept.
pub fn parse_properties(bytes: &[u8]) -> Vec<(String, String)> {
    let text: String = bytes.iter().map(|&b| b as char).collect();
    let lines: Vec<&str> = text.split('\n').collect();
    logical_lines(&lines)
        .into_iter()
        .map(|(_, _, logical)| {
            let (key, value) = split_key_value(&logical);
            (unescape(key), unescape(value))
        })
        .collect()
}

/// The entries of properties text split into physical lines (a trailing `\r` is dropped):
/// `(first line, last line, logical line)` for every line that is not blank or a comment, with
/// `\` continuations joined (leading blanks of each piece dropped, as `Properties.load`).
fn logical_lines<S: AsRef<str>>(lines: &[S]) -> Vec<(usize, usize, String)> {
    let physical = |i: usize| {
        let l = lines[i].as_ref();
        l.strip_suffix('\r').unwrap_or(l).trim_start_matches([' ', '\t', '\x0c'])
    };
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let start = i;
        let mut logical = physical(i).to_owned();
        if !(logical.is_empty() || logical.starts_with('#') || logical.starts_with('!')) {
            while ends_with_odd_backslashes(&logical) {
                logical.pop();
                if i + 1 == lines.len() {
                    break;
                }
                i += 1;
                logical.push_str(physical(i));
            }
            out.push((start, i, logical));
        }
        i += 1;
    }
    out
}

fn ends_with_odd_backslashes(s: &str) -> bool {
    s.chars().rev().take_while(|&c| c == '\\').count() % 2 == 1
}

fn split_key_value(line: &str) -> (&str, &str) {
    let mut escaped = false;
    for (i, c) in line.char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        match c {
            '\\' => escaped = true,
            '=' | ':' => return (&line[..i], line[i + 1..].trim_start_matches([' ', '\t', '\x0c'])),
            ' ' | '\t' | '\x0c' => {
                let rest = line[i..].trim_start_matches([' ', '\t', '\x0c']);
                let rest = rest.strip_prefix(['=', ':']).unwrap_or(rest);
                return (&line[..i], rest.trim_start_matches([' ', '\t', '\x0c']));
            }
            _ => {}
        }
    }
    (line, "")
}

fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('f') => out.push('\x0c'),
            Some('u') => {
                let hex: String = chars.by_ref().take(4).collect();
                match u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
                    Some(ch) => out.push(ch),
                    None => out.push_str(&hex),
                }
            }
            Some(other) => out.push(other),
            None => {}
        }
    }
    out
}

/// Renders `(key, value)` pairs as properties text (for `-p` and GET_*_CONFIG answers).
pub fn to_properties(entries: &[(&str, String)]) -> String {
    let mut s = String::new();
    for (k, v) in entries {
        s.push_str(k);
        s.push('=');
        s.push_str(v);
        s.push('\n');
    }
    s
}

/// Rewrites properties `text` (ISO-8859-1 bytes) with `updates` applied, keeping everything
/// else (comments, order, blank lines, line ends): a key's last definition is replaced in place
/// (as `key=value`; where a key is defined twice, the last one is the one `load` keeps), a key
/// not yet defined is appended. What `UPDATE_BROKER_CONFIG` / `UPDATE_NAMESRV_CONFIG` write back
/// to the file given with `-c`; Java rewrites the whole file with every key instead.
pub fn merge_properties(text: &[u8], updates: &[(String, String)]) -> Vec<u8> {
    let text: String = text.iter().map(|&b| b as char).collect();
    let mut lines: Vec<String> =
        if text.is_empty() { Vec::new() } else { text.split('\n').map(str::to_owned).collect() };
    // A trailing newline leaves an empty last piece: appended keys go before it.
    let ends_with_newline = lines.last().is_some_and(|l| l.is_empty());
    if ends_with_newline {
        lines.pop();
    }
    // (first physical line, last physical line, key) of every logical line.
    let defs: Vec<(usize, usize, String)> = logical_lines(&lines)
        .into_iter()
        .map(|(first, last, logical)| (first, last, unescape(split_key_value(&logical).0)))
        .collect();
    let mut replaced: Vec<Option<String>> = vec![None; lines.len()];
    let mut dropped = vec![false; lines.len()];
    let mut appended = Vec::new();
    for (key, value) in updates {
        let line = format!("{}={}", escape(key, true), escape(value, false));
        match defs.iter().rev().find(|(_, _, k)| k == key) {
            Some(&(first, last, _)) => {
                let cr = if lines[last].ends_with('\r') { "\r" } else { "" };
                replaced[first] = Some(format!("{line}{cr}"));
                dropped[first + 1..=last].iter_mut().for_each(|d| *d = true);
            }
            None => appended.push(line),
        }
    }
    let mut out: Vec<String> = Vec::with_capacity(lines.len() + appended.len());
    for (n, l) in lines.into_iter().enumerate() {
        if !dropped[n] {
            out.push(replaced[n].take().unwrap_or(l));
        }
    }
    out.extend(appended);
    let mut joined = out.join("\n");
    if !joined.is_empty() {
        joined.push('\n');
    }
    joined.chars().flat_map(latin1).collect()
}

/// One char as ISO-8859-1 bytes: itself, or `\uXXXX` (UTF-16 units) above U+00FF.
fn latin1(c: char) -> Vec<u8> {
    match u8::try_from(u32::from(c)) {
        Ok(b) => vec![b],
        Err(_) => c.encode_utf16(&mut [0; 2]).iter().flat_map(|u| format!("\\u{u:04X}").into_bytes()).collect(),
    }
}

/// Escapes a key or value as `Properties.store` does (separators in keys, a leading blank in
/// values, control characters, backslashes).
fn escape(s: &str, key: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for (i, c) in s.chars().enumerate() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\x0c' => out.push_str("\\f"),
            ' ' if key || i == 0 => out.push_str("\\ "),
            '=' | ':' | '#' | '!' if key || i == 0 => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// Java's `tls.*` settings from a config's entries, overridden by the file `tls.config.file`
/// names (Java's `TlsHelper` reads `/etc/rocketmq/tls.properties` by default, when it exists).
/// A bad value or unreadable file refuses start-up naming the key.
pub fn tls_settings(entries: &[(&'static str, String)]) -> Result<crate::remoting::tls::TlsSettings, ConfigError> {
    let mut values: std::collections::HashMap<String, String> = entries
        .iter()
        .filter(|(k, v)| k.starts_with("tls.") && !v.trim().is_empty())
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect();
    let default_file = Path::new("/etc/rocketmq/tls.properties");
    let file =
        values.get("tls.config.file").map(PathBuf::from).or_else(|| default_file.exists().then(|| default_file.into()));
    if let Some(file) = file {
        let pairs = read_properties(&file)
            .map_err(|e| ConfigError::Refused { key: "tls.config.file".into(), reason: e.to_string() })?;
        values.extend(pairs.into_iter().filter(|(k, v)| k.starts_with("tls.") && !v.trim().is_empty()));
    }
    crate::remoting::tls::TlsSettings::from_keys(|k| values.get(k).cloned())
        .map_err(|e| ConfigError::Refused { key: e.key.into(), reason: e.reason })
}

/// The user's home directory, as Java's `user.home`.
pub fn home_dir() -> PathBuf {
    std::env::var_os("HOME").map_or_else(|| PathBuf::from("."), PathBuf::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_properties_syntax() {
        let text = b"# comment\n! also\nlistenPort=10911 \nbrokerName : broker-a\nkey value\n  spaced = v \\\n   continued\nu=\\u0041\\tB\nempty\n";
        let p = parse_properties(text);
        assert_eq!(
            p,
            vec![
                ("listenPort".into(), "10911 ".into()),
                ("brokerName".into(), "broker-a".into()),
                ("key".into(), "value".into()),
                ("spaced".into(), "v continued".into()),
                ("u".into(), "A\tB".into()),
                ("empty".into(), "".into()),
            ]
        );
    }

    #[test]
    fn merge_replaces_in_place_appends_and_round_trips() {
        let text = b"# broker\r\nbrokerName=a\r\n\nlistenPort = 10911\nflushDiskType=ASYNC_\\\n  FLUSH\nlistenPort=10912\n# end\n";
        let up = |k: &str, v: &str| (k.to_owned(), v.to_owned());
        let merged = merge_properties(
            text,
            &[up("listenPort", "20911"), up("flushDiskType", "SYNC_FLUSH"), up("new key", " x=y\\é€")],
        );
        let s: String = merged.iter().map(|&b| b as char).collect();
        // Comments, blank lines, CRLF and the first (shadowed) listenPort stay as they were.
        assert_eq!(
            s,
            "# broker\r\nbrokerName=a\r\n\nlistenPort = 10911\nflushDiskType=SYNC_FLUSH\nlistenPort=20911\n# end\nnew\\ key=\\ x=y\\\\\u{e9}\\u20AC\n"
        );
        let back = parse_properties(&merged);
        let get = |k: &str| back.iter().rev().find(|(key, _)| key == k).map(|(_, v)| v.clone());
        assert_eq!(get("listenPort").as_deref(), Some("20911"));
        assert_eq!(get("flushDiskType").as_deref(), Some("SYNC_FLUSH"));
        assert_eq!(get("new key").as_deref(), Some(" x=y\\é€"));
        assert_eq!(get("brokerName").as_deref(), Some("a"));
        // An empty or missing file becomes just the updates.
        assert_eq!(merge_properties(b"", &[up("a", "1")]), b"a=1\n");
        assert_eq!(merge_properties(b"a=0", &[up("a", "1"), up("b", "2")]), b"a=1\nb=2\n");
    }

    #[test]
    fn latin1_bytes_and_crlf() {
        let p = parse_properties(b"name=caf\xe9\r\n");
        assert_eq!(p, vec![("name".into(), "café".into())]);
    }

    #[test]
    fn values_are_checked_and_named() {
        let err = parse_value::<u16>("listenPort", "10911 ").unwrap_err();
        assert!(err.to_string().contains("listenPort"), "{err}");
        assert!(parse_value::<bool>("x", "yes").is_err());
        assert!(parse_value::<bool>("x", "TRUE").unwrap());
        assert_eq!(parse_value::<String>("x", " a ").unwrap(), "a");
    }
}
