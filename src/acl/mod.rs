//! ACL 1.0 (`aclEnable=true`, `plain_acl.yml`): who may send which request, as the Java
//! broker's `PlainAccessValidator` / `PlainPermissionManager` decide it (5.x rules, which are
//! 4.9's plus SEND_BATCH_MESSAGE and the ACL admin codes among the admin-only ones).
//!
//! Owns the account tables, their files and reloads, the signature check and the permission
//! check. Imports `model` (group naming) and `persist` (atomic writes) only: the broker turns a
//! request into an [`AccessRequest`] (`broker/acl.rs`), so this area never sees wire types.
//!
//! ```text
//! validate(request):
//!   peer in globalWhiteRemoteAddresses                      -> allowed
//!   no AccessKey                                            -> "No accessKey is configured"
//!   unknown AccessKey                                       -> "No acl config for <ak>"
//!   peer in the account's whiteRemoteAddress                -> allowed
//!   Signature != Base64(HmacSHA1(secretKey, values of the ext fields sorted by name,
//!                                without Signature, then the body))
//!                                                           -> "Check signature failed for accessKey=<ak>"
//!   PUB on RMQ_SYS_TRACE_TOPIC                              -> allowed
//!   admin-only code, account not admin; a resource the account lacks -> refused
//! ```
//! [`authority`] answers the same question for a peer authenticated by Kafka's SASL.
//! Safer than Java (listed in the README's differences): UPDATE_GLOBAL_WHITE_ADDRS_CONFIG is
//! admin-only, its `aclFileFullPath` must name a loaded ACL file, signatures are compared in
//! constant time, and no secret key is printed (errors, `Debug`).
//! The files are polled every 5 s (`AclFileWatchService`) and reloaded when their content changes;
//! a file that fails to load leaves the previous tables in force.

pub mod address;
pub mod authority;
pub mod file;
pub mod perm;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

use base64::Engine;
use tracing::{info, warn};

use address::AddressRule;
use file::{AclFiles, DataVersion};
use perm::{Account, AccountConfig};

/// `TopicValidator.RMQ_SYS_TRACE_TOPIC`: publishing traces needs no permission.
const TRACE_TOPIC: &str = "RMQ_SYS_TRACE_TOPIC";

/// What the validator needs of one request.
#[derive(Debug, Default)]
pub struct AccessRequest<'a> {
    pub code: i32,
    /// The peer's address ([`address::host_of`]).
    pub host: String,
    pub access_key: Option<&'a str>,
    pub signature: Option<&'a str>,
    /// The signed values: ext-field values in key order, without `Signature`.
    pub signed_values: Vec<&'a str>,
    pub body: &'a [u8],
    /// The resources the request touches and the permission each needs (later entries for the
    /// same resource win, as Java's map puts do).
    pub resources: Vec<(String, u8)>,
}

/// The tables one load of the files produced.
#[derive(Debug, Default)]
struct Tables {
    accounts: HashMap<String, (Arc<Account>, PathBuf)>,
    global_white: Vec<AddressRule>,
    versions: BTreeMap<PathBuf, DataVersion>,
    files: Vec<PathBuf>,
    fingerprint: u64,
}

/// One broker's ACL.
pub struct Acl {
    files: AclFiles,
    tables: RwLock<Arc<Tables>>,
    /// Serializes admin edits and reloads.
    edit: Mutex<()>,
}

impl Acl {
    /// Loads the files under `home` (`rocketmqHome`), creating an empty default file when there is
    /// none (as Java does). An error names the file and what is wrong with it.
    pub fn open(home: &Path) -> Result<Self, String> {
        let files = AclFiles::new(home);
        if !files.default_file.exists() {
            if let Some(dir) = files.default_file.parent() {
                std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
            }
            std::fs::write(&files.default_file, b"")
                .map_err(|e| format!("cannot create ACL file {}: {e}", files.default_file.display()))?;
        }
        let tables = load(&files)?;
        if tables.accounts.is_empty() && tables.global_white.is_empty() {
            warn!(file = %files.default_file.display(), "aclEnable=true but no account and no global white address is configured: every request is refused");
        }
        info!(files = tables.files.len(), accounts = tables.accounts.len(), "ACL loaded");
        Ok(Self { files, tables: RwLock::new(Arc::new(tables)), edit: Mutex::new(()) })
    }

    fn tables(&self) -> Arc<Tables> {
        self.tables.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// `PlainPermissionManager.validate`: `Err` is the AclException message.
    pub fn validate(&self, req: &AccessRequest<'_>) -> Result<(), String> {
        let t = self.tables();
        if t.global_white.iter().any(|r| r.matches(&req.host)) {
            return Ok(());
        }
        let ak = req.access_key.ok_or("No accessKey is configured")?;
        let (account, _) = t.accounts.get(ak).ok_or_else(|| format!("No acl config for {ak}"))?;
        if account.white.matches(&req.host) {
            return Ok(());
        }
        let expected = signature(&account.secret_key, &req.signed_values, req.body);
        // Constant time: how long the comparison takes says nothing about how close a guess was.
        let given = req.signature.unwrap_or_default().as_bytes();
        if !bool::from(subtle::ConstantTimeEq::ct_eq(given, expected.as_bytes())) {
            return Err(format!("Check signature failed for accessKey={ak}"));
        }
        let mut needed: Vec<(String, u8)> = Vec::with_capacity(req.resources.len());
        for (res, perm) in &req.resources {
            match needed.iter_mut().find(|(r, _)| r == res) {
                Some(slot) => slot.1 = *perm,
                None => needed.push((res.clone(), *perm)),
            }
        }
        if needed.iter().any(|(r, p)| r == TRACE_TOPIC && *p == perm::PUB) {
            return Ok(());
        }
        account.check_perms(req.code, &needed)
    }

    /// Reloads the files when their content changed; `Ok(true)` when it did. A file that fails to
    /// load leaves the tables as they were.
    pub fn reload_if_changed(&self) -> Result<bool, String> {
        let _edit = self.edit.lock().unwrap_or_else(|e| e.into_inner());
        if fingerprint(&self.files.list()) == self.tables().fingerprint {
            return Ok(false);
        }
        let tables = load(&self.files)?;
        info!(files = tables.files.len(), accounts = tables.accounts.len(), "ACL files changed: reloaded");
        *self.tables.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(tables);
        Ok(true)
    }

    /// Applies an edit to one file, writes it with its next version and reloads.
    /// `change` says whether it changed anything; nothing is written when it did not.
    /// A file that is not a YAML map of the members ferrocket knows (edited by hand since it was
    /// loaded) is refused and left as it is, never rewritten.
    fn edit_file(
        &self,
        path: &Path,
        change: impl FnOnce(&mut Option<yaml_rust2::Yaml>) -> bool,
    ) -> Result<bool, String> {
        let mut doc = file::read(path)?;
        if let Some(d) = &doc {
            file::parse(path, d).map_err(|e| format!("{e}; the file is left as it is"))?;
        }
        if !change(&mut doc) {
            return Ok(false);
        }
        file::bump_version(&mut doc);
        file::write(path, doc.as_ref().expect("an edit leaves a document"))?;
        let tables = load(&self.files)?;
        *self.tables.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(tables);
        Ok(true)
    }

    /// UPDATE_AND_CREATE_ACL_CONFIG (`updateAccessConfig`): the account is updated in the file
    /// that holds it, or added to the default file.
    pub fn update_account(&self, cfg: &AccountConfig) -> Result<(), String> {
        cfg.check_keys()?;
        perm::check_resource_perms(cfg.topic_perms.as_deref().unwrap_or_default())?;
        perm::check_resource_perms(cfg.group_perms.as_deref().unwrap_or_default())?;
        // What the checks above leave: the white address must parse too.
        Account::build(cfg)?;
        let _edit = self.edit.lock().unwrap_or_else(|e| e.into_inner());
        let ak = cfg.access_key.clone().unwrap_or_default();
        let path = self.tables().accounts.get(&ak).map_or_else(|| self.files.default_file.clone(), |(_, p)| p.clone());
        self.edit_file(&path, |doc| {
            file::upsert_account(doc, cfg);
            true
        })
        .map(drop)
    }

    /// DELETE_ACL_CONFIG (`deleteAccessConfig`): `Ok(false)` when no file holds the key.
    pub fn delete_account(&self, access_key: &str) -> Result<bool, String> {
        if access_key.is_empty() {
            return Ok(false);
        }
        let _edit = self.edit.lock().unwrap_or_else(|e| e.into_inner());
        let Some((_, path)) = self.tables().accounts.get(access_key).cloned() else { return Ok(false) };
        self.edit_file(&path, |doc| file::remove_account(doc, access_key))
    }

    /// UPDATE_GLOBAL_WHITE_ADDRS_CONFIG (`updateGlobalWhiteAddrsConfig`): into `file` (the default
    /// file when empty), which must be one of the loaded ACL files ([`Self::loaded_file`]).
    pub fn update_global_white(&self, addrs: &[String], file: Option<&str>) -> Result<bool, String> {
        for a in addrs {
            AddressRule::parse(Some(a))?;
        }
        let _edit = self.edit.lock().unwrap_or_else(|e| e.into_inner());
        let path = self.loaded_file(file)?;
        self.edit_file(&path, |doc| {
            file::set_global_white(doc, addrs);
            true
        })
    }

    /// The loaded ACL file `requested` names (the default file when it names none). Java accepts
    /// any existing file whose name starts with `rocketmqHome` (`<home>/../x`, `broker.conf`);
    /// here the path must be absolute, without `.` or `..`, and resolve (symbolic links
    /// followed) to a file the ACL loaded.
    fn loaded_file(&self, requested: Option<&str>) -> Result<PathBuf, String> {
        let Some(requested) = requested.map(str::trim).filter(|f| !f.is_empty()) else {
            return Ok(self.files.default_file.clone());
        };
        let refused = || {
            format!(
                "aclFileFullPath {requested} is not one of the ACL files this broker loaded ({} and *.yml, *.yaml under {})",
                self.files.default_file.display(),
                self.files.dir.display()
            )
        };
        let path = Path::new(requested);
        let plain =
            path.components().all(|c| matches!(c, Component::RootDir | Component::Prefix(_) | Component::Normal(_)));
        if !path.is_absolute() || !plain {
            return Err(refused());
        }
        let real = path.canonicalize().map_err(|_| refused())?;
        self.tables().files.iter().find(|f| f.canonicalize().is_ok_and(|c| c == real)).cloned().ok_or_else(refused)
    }

    /// The default file's version as JSON (`getAclConfigDataVersion`).
    pub fn version_json(&self) -> String {
        let t = self.tables();
        t.versions.get(&self.files.default_file).copied().unwrap_or_default().to_json()
    }

    /// Every file's version as a JSON object by path (`getDataVersionMap`).
    pub fn all_versions_json(&self) -> String {
        let t = self.tables();
        let members: Vec<String> = t
            .versions
            .iter()
            .map(|(p, v)| format!("{}:{}", serde_json::Value::String(p.display().to_string()), v.to_json()))
            .collect();
        format!("{{{}}}", members.join(","))
    }
}

/// `AclSigner.calSignature`: Base64(HmacSHA1(secret, values ++ body)).
pub fn signature(secret: &str, values: &[&str], body: &[u8]) -> String {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY, secret.as_bytes());
    let mut ctx = ring::hmac::Context::with_key(&key);
    for v in values {
        ctx.update(v.as_bytes());
    }
    ctx.update(body);
    base64::engine::general_purpose::STANDARD.encode(ctx.sign().as_ref())
}

/// A hash of every file's path and content: what the watcher compares.
fn fingerprint(files: &[PathBuf]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for f in files {
        f.hash(&mut h);
        std::fs::read(f).unwrap_or_default().hash(&mut h);
    }
    h.finish()
}

/// `PlainPermissionManager.load`: every file; an access key defined in two files keeps the first.
fn load(files: &AclFiles) -> Result<Tables, String> {
    let list = files.list();
    let mut t = Tables { fingerprint: fingerprint(&list), ..Tables::default() };
    for path in &list {
        let Some(doc) = file::read(path)? else {
            warn!(file = %path.display(), "No data in ACL file");
            continue;
        };
        let data = file::parse(path, &doc)?;
        for rule in &data.global_white {
            let parsed = AddressRule::parse(Some(rule)).map_err(|e| format!("ACL file {}: {e}", path.display()))?;
            t.global_white.push(parsed);
        }
        for cfg in &data.accounts {
            let account = Account::build(cfg).map_err(|e| format!("ACL file {}: {e}", path.display()))?;
            if t.accounts.contains_key(&account.access_key) {
                warn!(access_key = %account.access_key, file = %path.display(), "The accessKey is repeated in multiple ACL files");
                continue;
            }
            t.accounts.insert(account.access_key.clone(), (Arc::new(account), path.clone()));
        }
        if let Some(v) = data.version {
            t.versions.insert(path.clone(), v);
        }
    }
    t.files = list;
    Ok(t)
}
