//! Java `.properties` text: read, parse (`java.util.Properties.load`), render, and merge
//! updates into a file in place. Used by the config loaders, the config-update requests of the
//! broker and the NameServer, and the TLS settings (`tls.config.file`).
//!
//! May import: nothing of ferrocket's (a leaf).

use std::path::Path;

/// Reads a Java properties file.
pub fn read_properties(path: &Path) -> std::io::Result<Vec<(String, String)>> {
    Ok(parse_properties(&std::fs::read(path)?))
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
}
