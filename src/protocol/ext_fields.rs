//! Ext fields ("custom header"): the string-to-string map every command carries.
//!
//! A vector of `(name, value)` pairs kept sorted by name (fastjson writes them sorted, and
//! readers such as the ACL signature need that order), with the subset of `BTreeMap`'s API the
//! code uses. A header has a dozen fields: one allocation for all the slots instead of a tree
//! node per eleven entries, a lookup that tells single-letter names apart without a `memcmp`,
//! and names borrowed from a static table for the names frequent requests use ([`ext_key`]).
//!
//! May import: std only.

use std::borrow::Cow;
use std::fmt;

/// An ext-field name: borrowed when it is one of the names headers use ([`ext_key`]), owned
/// otherwise, so that decoding a request allocates for its values only.
pub type ExtKey = Cow<'static, str>;

/// Single-letter names: `SendMessageRequestHeaderV2` writes its fields as `a` to `n`.
const LETTERS: [&str; 26] = [
    "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p", "q", "r", "s", "t", "u", "v", "w",
    "x", "y", "z",
];

/// The static name equal to `name`, for the names frequent requests and responses carry.
fn known_key(name: &str) -> Option<&'static str> {
    if let [c @ b'a'..=b'z'] = name.as_bytes() {
        return Some(LETTERS[usize::from(c - b'a')]);
    }
    Some(match name {
        "topic" => "topic",
        "queueId" => "queueId",
        "queueOffset" => "queueOffset",
        "consumerGroup" => "consumerGroup",
        "producerGroup" => "producerGroup",
        "maxMsgNums" => "maxMsgNums",
        "sysFlag" => "sysFlag",
        "commitOffset" => "commitOffset",
        "suspendTimeoutMillis" => "suspendTimeoutMillis",
        "subscription" => "subscription",
        "subVersion" => "subVersion",
        "expressionType" => "expressionType",
        "maxMsgBytes" => "maxMsgBytes",
        "requestSource" => "requestSource",
        "proxyFrowardClientId" => "proxyFrowardClientId",
        "brokerName" => "brokerName",
        "bname" => "bname",
        "lo" => "lo",
        "msgId" => "msgId",
        "transactionId" => "transactionId",
        "nextBeginOffset" => "nextBeginOffset",
        "minOffset" => "minOffset",
        "maxOffset" => "maxOffset",
        "suggestWhichBrokerId" => "suggestWhichBrokerId",
        "MSG_REGION" => "MSG_REGION",
        "TRACE_ON" => "TRACE_ON",
        "AccessKey" => "AccessKey",
        "Signature" => "Signature",
        "offset" => "offset",
        _ => return None,
    })
}

/// An ext-field name as stored: borrowed for a known name, else a copy.
pub fn ext_key(name: &str) -> ExtKey {
    known_key(name).map_or_else(|| Cow::Owned(name.to_owned()), Cow::Borrowed)
}

/// As [`ext_key`], for a name that may be borrowed or owned (an owned one is kept when it is
/// not a known name).
pub fn ext_key_cow(name: Cow<'_, str>) -> ExtKey {
    match name {
        Cow::Borrowed(k) => ext_key(k),
        Cow::Owned(k) => ext_key_owned(k),
    }
}

/// As [`ext_key`], keeping `name`'s allocation when the name is not a known one.
pub fn ext_key_owned(name: String) -> ExtKey {
    known_key(&name).map_or(Cow::Owned(name), Cow::Borrowed)
}

/// Sorted, unique names, each with its value.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct ExtFields(Vec<(ExtKey, String)>);

impl ExtFields {
    pub fn new() -> Self {
        Self(Vec::new())
    }

    /// Builds from pairs in any order; a repeated name keeps its last value, as inserting
    /// would. Pairs already sorted (what clients send) are taken as they are.
    pub fn from_pairs(mut pairs: Vec<(ExtKey, String)>) -> Self {
        if !pairs.windows(2).all(|w| w[0].0 < w[1].0) {
            // Stable: of equal names the last stays last, and is the one kept.
            pairs.sort_by(|a, b| a.0.cmp(&b.0));
            let mut unique: Vec<(ExtKey, String)> = Vec::with_capacity(pairs.len());
            for p in pairs {
                match unique.last_mut() {
                    Some(last) if last.0 == p.0 => *last = p,
                    _ => unique.push(p),
                }
            }
            pairs = unique;
        }
        Self(pairs)
    }

    /// Where `name` is, or where it would go.
    fn find(&self, name: &str) -> Result<usize, usize> {
        self.position(name).ok_or_else(|| self.0.partition_point(|(k, _)| k.as_ref() < name))
    }

    /// Where `name` is.
    fn position(&self, name: &str) -> Option<usize> {
        if self.0.len() > 16 {
            // Not a header a client writes: no scan of every name.
            return self.0.binary_search_by(|(k, _)| k.as_ref().cmp(name)).ok();
        }
        let key = name.as_bytes();
        // Lengths and first bytes first: most names differ there, and one-letter names (every
        // field of a SEND_MESSAGE_V2) need nothing more.
        self.0.iter().position(|(k, _)| {
            let k = k.as_bytes();
            k.len() == key.len() && k.first() == key.first() && (k.len() <= 1 || k[1..] == key[1..])
        })
    }

    pub fn get(&self, name: &str) -> Option<&String> {
        self.position(name).map(|i| &self.0[i].1)
    }

    pub fn contains_key(&self, name: &str) -> bool {
        self.position(name).is_some()
    }

    /// Sets `name`, returning the value it replaces. Shifts the names after it: for the few
    /// fields of a header; build big maps with [`Self::from_pairs`].
    pub fn insert(&mut self, name: ExtKey, value: String) -> Option<String> {
        match self.find(&name) {
            Ok(i) => Some(std::mem::replace(&mut self.0[i].1, value)),
            Err(i) => {
                self.0.insert(i, (name, value));
                None
            }
        }
    }

    pub fn remove(&mut self, name: &str) -> Option<String> {
        self.position(name).map(|i| self.0.remove(i).1)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// In name order.
    pub fn iter(&self) -> impl Iterator<Item = (&ExtKey, &String)> {
        self.0.iter().map(|(k, v)| (k, v))
    }

    pub fn values(&self) -> impl Iterator<Item = &String> {
        self.0.iter().map(|(_, v)| v)
    }
}

impl fmt::Debug for ExtFields {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl std::ops::Index<&str> for ExtFields {
    type Output = String;

    /// Panics when `name` is absent, as `BTreeMap` does.
    fn index(&self, name: &str) -> &String {
        self.get(name).unwrap_or_else(|| panic!("no ext field {name}"))
    }
}

impl FromIterator<(ExtKey, String)> for ExtFields {
    fn from_iter<I: IntoIterator<Item = (ExtKey, String)>>(iter: I) -> Self {
        Self::from_pairs(iter.into_iter().collect())
    }
}

impl<const N: usize> From<[(ExtKey, String); N]> for ExtFields {
    fn from(pairs: [(ExtKey, String); N]) -> Self {
        Self::from_pairs(pairs.into())
    }
}

impl<'a> IntoIterator for &'a ExtFields {
    type Item = (&'a ExtKey, &'a String);
    type IntoIter = std::iter::Map<std::slice::Iter<'a, (ExtKey, String)>, fn(&'a (ExtKey, String)) -> Self::Item>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().map(|(k, v)| (k, v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ext(pairs: &[(&str, &str)]) -> ExtFields {
        pairs.iter().map(|(k, v)| (ext_key(k), v.to_string())).collect()
    }

    #[test]
    fn behaves_like_a_sorted_map() {
        let mut e = ext(&[("topic", "T"), ("b", "1"), ("a", "x"), ("b", "2"), ("zz", "z")]);
        assert_eq!(e.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>(), ["a=x", "b=2", "topic=T", "zz=z"]);
        assert_eq!(e.get("b").map(String::as_str), Some("2"), "a repeated name keeps its last value");
        assert_eq!(e.get("c"), None);
        assert_eq!(e.insert(ext_key("c"), "3".into()), None);
        assert_eq!(e.insert(ext_key("a"), "y".into()), Some("x".into()));
        assert_eq!(e.remove("topic"), Some("T".into()));
        assert_eq!(e.remove("topic"), None);
        assert!(e.contains_key("zz") && !e.contains_key("z"));
        assert_eq!(e.iter().map(|(k, _)| k.as_ref()).collect::<Vec<_>>(), ["a", "b", "c", "zz"]);
        assert_eq!(e.values().cloned().collect::<Vec<_>>(), ["y", "2", "3", "z"]);
        assert_eq!(e["c"], "3");
        assert_eq!(e.len(), 4);
        assert_eq!(e, ext(&[("zz", "z"), ("c", "3"), ("b", "2"), ("a", "y")]), "equal whatever the insertion order");
        assert!(ExtFields::new().is_empty());
        assert_eq!(format!("{:?}", ext(&[("k", "v")])), r#"{"k": "v"}"#);
    }

    #[test]
    fn big_maps_stay_sorted_and_searchable() {
        let mut e: ExtFields = (0..5000).rev().map(|i| (ExtKey::from(format!("k{i:05}")), i.to_string())).collect();
        assert_eq!(e.len(), 5000);
        assert_eq!(e.get("k04321").map(String::as_str), Some("4321"));
        assert_eq!(e.get("k5"), None);
        assert_eq!(e.insert(ext_key("k0"), "x".into()), None);
        assert_eq!(e.iter().next().map(|(k, _)| k.as_ref()), Some("k0"));
        assert!(e.iter().zip(e.iter().skip(1)).all(|(a, b)| a.0 < b.0));
    }

    #[test]
    fn known_names_are_borrowed() {
        assert!(matches!(ext_key("a"), Cow::Borrowed("a")));
        assert!(matches!(ext_key("consumerGroup"), Cow::Borrowed("consumerGroup")));
        assert!(matches!(ext_key("A"), Cow::Owned(_)));
        assert!(matches!(ext_key_owned("custom".into()), Cow::Owned(s) if s == "custom"));
    }
}
