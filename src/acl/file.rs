//! The ACL files (`PlainPermissionManager.java`): where they are, how one is read, and the edits
//! the ACL admin requests make to one.
//!
//! ```text
//! <rocketmqHome>/conf/plain_acl.yml            the default file (created empty when missing)
//! <rocketmqHome>/conf/acl/**/*.yml|*.yaml      more files (<rocketmqHome>/conf/tools.yml skipped)
//!
//! globalWhiteRemoteAddresses: [ "10.10.103.*", ... ]
//! accounts:
//!   - accessKey: RocketMQ            secretKey: 12345678      whiteRemoteAddress: 192.168.0.*
//!     admin: false                   defaultTopicPerm: DENY   defaultGroupPerm: SUB
//!     topicPerms: [ "topicA=DENY", "topicB=PUB|SUB" ]         groupPerms: [ "groupA=DENY" ]
//! dataVersion:
//!   - counter: 3                     timestamp: 1733212345678
//! ```
//! A file is read as YAML (the Java broker uses SnakeYAML) and written back whole, as Java's
//! `AclUtils.writeDataObject` does, atomically (temp file + rename). Only a file that still
//! parses as the map above is edited (`Acl::edit_file` checks): one edited by hand into
//! something else is refused, not replaced.
//!
//! May import: `persist` and modules of `acl/`; the area's rule is its line in
//! docs/architecture.md.

use std::path::{Path, PathBuf};

use yaml_rust2::yaml::Hash;
use yaml_rust2::{Yaml, YamlEmitter, YamlLoader};

use super::perm::AccountConfig;

/// The files of one broker's ACL.
#[derive(Clone, Debug)]
pub struct AclFiles {
    pub home: PathBuf,
    pub default_file: PathBuf,
    pub dir: PathBuf,
}

impl AclFiles {
    pub fn new(home: &Path) -> Self {
        let conf = home.join("conf");
        Self { home: home.to_owned(), default_file: conf.join("plain_acl.yml"), dir: conf.join("acl") }
    }

    /// Every ACL file, the `conf/acl` tree first (sorted), then the default file.
    pub fn list(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        collect(&self.dir, &self.home.join("conf").join("tools.yml"), &mut out);
        out.sort();
        if self.default_file.exists() && !out.contains(&self.default_file) {
            out.push(self.default_file.clone());
        }
        out
    }
}

fn collect(dir: &Path, skip: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path == skip {
            continue;
        }
        let name = path.to_string_lossy();
        if name.ends_with(".yml") || name.ends_with(".yaml") {
            out.push(path);
        } else if path.is_dir() {
            collect(&path, skip, out);
        }
    }
}

/// `DataVersion`: a file's version, bumped by every admin edit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataVersion {
    pub timestamp: i64,
    pub counter: i64,
}

impl DataVersion {
    pub fn new() -> Self {
        Self { timestamp: now_ms(), counter: 0 }
    }

    /// `DataVersion.toJson` (fastjson, 5.x members).
    pub fn to_json(self) -> String {
        format!("{{\"counter\":{},\"stateVersion\":0,\"timestamp\":{}}}", self.counter, self.timestamp)
    }
}

impl Default for DataVersion {
    fn default() -> Self {
        Self::new()
    }
}

fn now_ms() -> i64 {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
}

/// What one file says.
#[derive(Clone, Debug, Default)]
pub struct FileData {
    pub global_white: Vec<String>,
    pub accounts: Vec<AccountConfig>,
    /// `None` for an empty file (Java records no version for it).
    pub version: Option<DataVersion>,
}

/// Reads a file as YAML; `Ok(None)` when it is missing or holds no document (or `~`).
pub fn read(path: &Path) -> Result<Option<Yaml>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read ACL file {}: {e}", path.display())),
    };
    let mut docs =
        YamlLoader::load_from_str(&text).map_err(|e| format!("ACL file {} is not YAML: {e}", path.display()))?;
    if docs.len() > 1 {
        // Written back, the documents after the first would be lost.
        return Err(format!("ACL file {} holds {} YAML documents; one map is expected", path.display(), docs.len()));
    }
    Ok(docs.pop().filter(|d| !matches!(d, Yaml::Null)))
}

/// The members of a file ferrocket reads; a member of the wrong shape is an error naming it.
pub fn parse(path: &Path, doc: &Yaml) -> Result<FileData, String> {
    let at = |what: &str| format!("ACL file {}: {what}", path.display());
    let Yaml::Hash(map) = doc else { return Err(at("the document is not a map")) };
    if map.is_empty() {
        return Ok(FileData::default());
    }
    let global_white = match map.get(&key("globalWhiteRemoteAddresses")) {
        None | Some(Yaml::Null) => Vec::new(),
        Some(Yaml::Array(items)) => items.iter().filter_map(scalar).collect(),
        Some(_) => return Err(at("globalWhiteRemoteAddresses is not a list")),
    };
    let accounts = match map.get(&key("accounts")) {
        None | Some(Yaml::Null) => Vec::new(),
        Some(Yaml::Array(items)) => items
            .iter()
            .map(|a| account(a).ok_or_else(|| at("an entry of accounts is not a map")))
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(at("accounts is not a list")),
    };
    let version = match map.get(&key("dataVersion")) {
        Some(Yaml::Array(items)) => items.first().map(version_of).or(Some(DataVersion::new())),
        _ => Some(DataVersion::new()),
    };
    Ok(FileData { global_white, accounts, version })
}

fn key(s: &str) -> Yaml {
    Yaml::String(s.to_owned())
}

/// A scalar in its string form (fastjson turns a YAML number into its text).
fn scalar(y: &Yaml) -> Option<String> {
    match y {
        Yaml::String(s) | Yaml::Real(s) => Some(s.clone()),
        Yaml::Integer(i) => Some(i.to_string()),
        Yaml::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}

fn list(y: Option<&Yaml>) -> Option<Vec<String>> {
    match y? {
        Yaml::Array(items) => Some(items.iter().filter_map(scalar).collect()),
        Yaml::Null => None,
        other => scalar(other).map(|s| vec![s]),
    }
}

fn account(y: &Yaml) -> Option<AccountConfig> {
    let Yaml::Hash(m) = y else { return None };
    let get = |k: &str| m.get(&key(k)).and_then(scalar);
    Some(AccountConfig {
        access_key: get("accessKey"),
        secret_key: get("secretKey"),
        white_remote_address: get("whiteRemoteAddress"),
        admin: get("admin").is_some_and(|s| s.eq_ignore_ascii_case("true")),
        default_topic_perm: get("defaultTopicPerm"),
        default_group_perm: get("defaultGroupPerm"),
        topic_perms: list(m.get(&key("topicPerms"))),
        group_perms: list(m.get(&key("groupPerms"))),
    })
}

fn version_of(y: &Yaml) -> DataVersion {
    let get = |k: &str| match y {
        Yaml::Hash(m) => m.get(&key(k)).and_then(scalar).and_then(|s| s.trim().parse::<i64>().ok()),
        _ => None,
    };
    DataVersion { timestamp: get("timestamp").unwrap_or_else(now_ms), counter: get("counter").unwrap_or(0) }
}

fn strings(items: &[String]) -> Yaml {
    Yaml::Array(items.iter().map(|s| Yaml::String(s.clone())).collect())
}

fn root(doc: &mut Option<Yaml>) -> &mut Hash {
    if !matches!(doc, Some(Yaml::Hash(_))) {
        *doc = Some(Yaml::Hash(Hash::new()));
    }
    match doc {
        Some(Yaml::Hash(h)) => h,
        _ => unreachable!("set to a map above"),
    }
}

fn accounts_of(doc: &mut Option<Yaml>) -> &mut Vec<Yaml> {
    let map = root(doc);
    let slot = map.entry(key("accounts")).or_insert_with(|| Yaml::Array(Vec::new()));
    if !matches!(slot, Yaml::Array(_)) {
        *slot = Yaml::Array(Vec::new());
    }
    match slot {
        Yaml::Array(a) => a,
        _ => unreachable!("set to a list above"),
    }
}

fn has_key(account: &Yaml, access_key: &str) -> bool {
    matches!(account, Yaml::Hash(m) if m.get(&key("accessKey")).and_then(scalar).as_deref() == Some(access_key))
}

/// `updateAccessConfig` on one file: the account of that access key is replaced by itself
/// updated with the given fields (`createAclAccessConfigMap`) and moved to the end, or added.
pub fn upsert_account(doc: &mut Option<Yaml>, cfg: &AccountConfig) {
    let ak = cfg.access_key.clone().unwrap_or_default();
    let accounts = accounts_of(doc);
    let mut entry = match accounts.iter().position(|a| has_key(a, &ak)) {
        Some(i) => match accounts.remove(i) {
            Yaml::Hash(h) => h,
            _ => Hash::new(),
        },
        None => Hash::new(),
    };
    entry.insert(key("accessKey"), Yaml::String(ak));
    if let Some(sk) = cfg.secret_key.as_deref().filter(|s| !s.is_empty()) {
        entry.insert(key("secretKey"), Yaml::String(sk.to_owned()));
    }
    if let Some(w) = &cfg.white_remote_address {
        entry.insert(key("whiteRemoteAddress"), Yaml::String(w.clone()));
    }
    entry.insert(key("admin"), Yaml::Boolean(cfg.admin));
    if let Some(p) = cfg.default_topic_perm.as_deref().filter(|s| !s.is_empty()) {
        entry.insert(key("defaultTopicPerm"), Yaml::String(p.to_owned()));
    }
    if let Some(p) = cfg.default_group_perm.as_deref().filter(|s| !s.is_empty()) {
        entry.insert(key("defaultGroupPerm"), Yaml::String(p.to_owned()));
    }
    if let Some(t) = &cfg.topic_perms {
        entry.insert(key("topicPerms"), strings(t));
    }
    if let Some(g) = &cfg.group_perms {
        entry.insert(key("groupPerms"), strings(g));
    }
    accounts.push(Yaml::Hash(entry));
}

/// `deleteAccessConfig` on one file: whether an account was removed.
pub fn remove_account(doc: &mut Option<Yaml>, access_key: &str) -> bool {
    let accounts = accounts_of(doc);
    let before = accounts.len();
    accounts.retain(|a| !has_key(a, access_key));
    accounts.len() != before
}

/// `updateGlobalWhiteAddrsConfig` on one file.
pub fn set_global_white(doc: &mut Option<Yaml>, addrs: &[String]) {
    root(doc).insert(key("globalWhiteRemoteAddresses"), strings(addrs));
}

/// `updateAclConfigFileVersion`: the next version (now, counter + 1), written into the file.
pub fn bump_version(doc: &mut Option<Yaml>) -> DataVersion {
    let map = root(doc);
    let old = match map.get(&key("dataVersion")) {
        Some(Yaml::Array(items)) => items.first().map(version_of),
        _ => None,
    };
    let next = DataVersion { timestamp: now_ms(), counter: old.map_or(0, |v| v.counter) + 1 };
    let mut entry = Hash::new();
    entry.insert(key("counter"), Yaml::Integer(next.counter));
    entry.insert(key("timestamp"), Yaml::Integer(next.timestamp));
    map.insert(key("dataVersion"), Yaml::Array(vec![Yaml::Hash(entry)]));
    next
}

/// Writes `doc` to `path` atomically.
pub fn write(path: &Path, doc: &Yaml) -> Result<(), String> {
    let mut text = String::new();
    YamlEmitter::new(&mut text).dump(doc).map_err(|e| format!("cannot write ACL file {}: {e}", path.display()))?;
    text.push('\n');
    crate::persist::write_atomically(path, text.as_bytes())
        .map_err(|e| format!("cannot write ACL file {}: {e}", path.display()))
}
