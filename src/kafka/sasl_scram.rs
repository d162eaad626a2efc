//! SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) as the server side, with Kafka's
//! `ScramSaslServer` messages: the password is the account's secretKey, its credential (salt,
//! 4096 iterations, StoredKey, ServerKey) is derived once per account and cached until the ACL
//! reloads the account (a new `Arc<Account>`).
//!
//! May import: `crate::acl` (accounts), `ring`, `subtle`, `base64`. No wire type: the caller hands
//! in the SASL tokens.
//!
//! ```text
//! client-first  n,[a=authzid],n=<user>,r=<cnonce>           (no extension: tokenauth is refused)
//! server-first  r=<cnonce><snonce>,s=<base64 salt>,i=4096
//! client-final  c=<base64 gs2 header>,r=<cnonce><snonce>,p=<base64 ClientProof>
//! server-final  v=<base64 ServerSignature>
//! ClientKey = HMAC(SaltedPassword, "Client Key")   StoredKey = H(ClientKey)
//! verify: H(ClientProof XOR HMAC(StoredKey, AuthMessage)) == StoredKey   (constant time)
//! ```
//! An unknown user gets a server-first with a salt derived from a per-process key (so the
//! exchange does not say which users exist; Kafka fails at once) and fails at the final message.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine;
use ring::rand::SecureRandom;
use ring::{digest, hmac, pbkdf2};

use crate::acl::perm::Account;

/// Kafka's `ScramMechanism` minimum and the iterations credentials are derived with.
pub const ITERATIONS: u32 = 4096;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mechanism {
    Sha256,
    Sha512,
}

impl Mechanism {
    pub fn name(self) -> &'static str {
        match self {
            Self::Sha256 => "SCRAM-SHA-256",
            Self::Sha512 => "SCRAM-SHA-512",
        }
    }

    fn hmac(self) -> hmac::Algorithm {
        match self {
            Self::Sha256 => hmac::HMAC_SHA256,
            Self::Sha512 => hmac::HMAC_SHA512,
        }
    }

    fn digest(self) -> &'static digest::Algorithm {
        match self {
            Self::Sha256 => &digest::SHA256,
            Self::Sha512 => &digest::SHA512,
        }
    }

    fn pbkdf2(self) -> pbkdf2::Algorithm {
        match self {
            Self::Sha256 => pbkdf2::PBKDF2_HMAC_SHA256,
            Self::Sha512 => pbkdf2::PBKDF2_HMAC_SHA512,
        }
    }

    fn output_len(self) -> usize {
        self.digest().output_len()
    }
}

/// What the server keeps of a password (Kafka's `ScramCredential`). No `Debug`: never printed.
pub struct Credential {
    salt: Vec<u8>,
    stored_key: Vec<u8>,
    server_key: Vec<u8>,
}

impl Credential {
    fn derive(mech: Mechanism, password: &[u8], salt: Vec<u8>) -> Self {
        let mut salted = vec![0u8; mech.output_len()];
        let iterations = NonZeroU32::new(ITERATIONS).expect("4096 is not zero");
        pbkdf2::derive(mech.pbkdf2(), iterations, &salt, password, &mut salted);
        let key = hmac::Key::new(mech.hmac(), &salted);
        let client_key = hmac::sign(&key, b"Client Key");
        let stored_key = digest::digest(mech.digest(), client_key.as_ref()).as_ref().to_vec();
        let server_key = hmac::sign(&key, b"Server Key").as_ref().to_vec();
        Self { salt, stored_key, server_key }
    }
}

/// A cached credential and the account it was derived from.
type Entry = (Arc<Account>, Arc<Credential>);

/// Credentials by (account, mechanism); an entry is used only while the ACL still holds the
/// same account (`Arc::ptr_eq`), so a reload or a changed secret derives anew. At most one
/// entry per account and mechanism (accounts come from the ACL files, not from clients).
pub struct Cache {
    entries: Mutex<HashMap<(String, Mechanism), Entry>>,
    /// Salts of unknown users: HMAC(fake_key, mechanism + user).
    fake_key: hmac::Key,
    rng: ring::rand::SystemRandom,
}

impl Default for Cache {
    fn default() -> Self {
        let rng = ring::rand::SystemRandom::new();
        let mut seed = [0u8; 32];
        // A failing system RNG leaves a zero key: fake salts then say nothing new either.
        let _ = rng.fill(&mut seed);
        Self { entries: Mutex::new(HashMap::new()), fake_key: hmac::Key::new(hmac::HMAC_SHA256, &seed), rng }
    }
}

impl Cache {
    fn credential(&self, mech: Mechanism, account: &Arc<Account>) -> Arc<Credential> {
        let key = (account.access_key.clone(), mech);
        if let Some((a, c)) = self.entries.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
            if Arc::ptr_eq(a, account) {
                return c.clone();
            }
        }
        let mut salt = vec![0u8; 16];
        let _ = self.rng.fill(&mut salt);
        let c = Arc::new(Credential::derive(mech, account.secret_key.as_bytes(), salt));
        self.entries.lock().unwrap_or_else(|e| e.into_inner()).insert(key, (account.clone(), c.clone()));
        c
    }

    fn nonce(&self) -> String {
        let mut n = [0u8; 24];
        let _ = self.rng.fill(&mut n);
        URL_SAFE_NO_PAD.encode(n)
    }
}

/// Why an exchange failed: `Err` of [`Exchange::step`]. `user` is set once the client named one.
#[derive(Debug)]
pub struct Failed {
    pub why: &'static str,
}

/// One SCRAM exchange on one connection.
pub struct Exchange {
    mech: Mechanism,
    /// After the client-first: what the final message is checked against.
    pending: Option<Pending>,
}

struct Pending {
    gs2_header: String,
    auth_prefix: String,
    nonce: String,
    credential: Option<Arc<Credential>>,
}

/// What a step produced.
pub enum Step {
    /// Send this token, expect the client's final message.
    Continue { token: Vec<u8>, user: String },
    /// Authenticated: send the server-final token.
    Done(Vec<u8>),
}

impl Exchange {
    pub fn new(mech: Mechanism) -> Self {
        Self { mech, pending: None }
    }

    /// Processes the client's next token. `lookup` gives the account of a user name.
    pub fn step(
        &mut self,
        cache: &Cache,
        token: &[u8],
        lookup: impl FnOnce(&str) -> Option<Arc<Account>>,
    ) -> Result<Step, Failed> {
        let text = std::str::from_utf8(token).map_err(|_| Failed { why: "the SCRAM message is not UTF-8" })?;
        match self.pending.take() {
            None => self.first(cache, text, lookup),
            Some(p) => self.last(text, p),
        }
    }

    fn first(
        &mut self,
        cache: &Cache,
        text: &str,
        lookup: impl FnOnce(&str) -> Option<Arc<Account>>,
    ) -> Result<Step, Failed> {
        let bad = Failed { why: "invalid SCRAM client-first message" };
        // gs2-header: "n," or "y," (no channel binding), optional "a=authzid", then ','.
        let (cb, rest) = text.split_once(',').ok_or(Failed { why: bad.why })?;
        if cb != "n" && cb != "y" {
            return Err(Failed { why: "SCRAM channel binding is not supported" });
        }
        let (authzid, bare) = rest.split_once(',').ok_or(Failed { why: bad.why })?;
        let mut fields = bare.split(',');
        let (Some(user), Some(nonce)) =
            (fields.next().and_then(|f| f.strip_prefix("n=")), fields.next().and_then(|f| f.strip_prefix("r=")))
        else {
            return Err(bad);
        };
        if fields.next().is_some() {
            return Err(Failed { why: "SCRAM extensions are not supported" });
        }
        let user = sasl_name(user).ok_or(Failed { why: bad.why })?;
        if let Some(a) = authzid.strip_prefix("a=") {
            if sasl_name(a).as_deref() != Some(user.as_str()) {
                return Err(Failed { why: "authorization id differs from the user name" });
            }
        } else if !authzid.is_empty() {
            return Err(bad);
        }
        if nonce.is_empty() || !nonce.bytes().all(|b| (0x21..=0x7e).contains(&b) && b != b',') {
            return Err(bad);
        }
        let credential = lookup(&user).map(|a| cache.credential(self.mech, &a));
        let salt = match &credential {
            Some(c) => c.salt.clone(),
            None => {
                let tag = hmac::sign(&cache.fake_key, format!("{}\0{user}", self.mech.name()).as_bytes());
                tag.as_ref()[..16].to_vec()
            }
        };
        let nonce = format!("{nonce}{}", cache.nonce());
        let server_first = format!("r={nonce},s={},i={ITERATIONS}", STANDARD.encode(&salt));
        let gs2_header = format!("{cb},{authzid},");
        let auth_prefix = format!("{bare},{server_first}");
        self.pending = Some(Pending { gs2_header, auth_prefix, nonce, credential });
        Ok(Step::Continue { token: server_first.into_bytes(), user })
    }

    fn last(&mut self, text: &str, p: Pending) -> Result<Step, Failed> {
        let bad = || Failed { why: "invalid SCRAM client-final message" };
        let (without_proof, proof) = text.rsplit_once(",p=").ok_or_else(bad)?;
        let mut fields = without_proof.split(',');
        let (Some(channel), Some(nonce)) =
            (fields.next().and_then(|f| f.strip_prefix("c=")), fields.next().and_then(|f| f.strip_prefix("r=")))
        else {
            return Err(bad());
        };
        if fields.next().is_some() {
            return Err(Failed { why: "SCRAM extensions are not supported" });
        }
        if STANDARD.decode(channel).ok().as_deref() != Some(p.gs2_header.as_bytes()) {
            return Err(Failed { why: "SCRAM channel binding does not match the client-first message" });
        }
        if nonce != p.nonce {
            return Err(Failed { why: "invalid client nonce in the final client message" });
        }
        let proof = STANDARD.decode(proof).map_err(|_| bad())?;
        let Some(c) = p.credential else { return Err(Failed { why: "invalid user credentials" }) };
        let auth_message = format!("{},{without_proof}", p.auth_prefix);
        let stored = hmac::Key::new(self.mech.hmac(), &c.stored_key);
        let signature = hmac::sign(&stored, auth_message.as_bytes());
        if proof.len() != signature.as_ref().len() {
            return Err(Failed { why: "invalid client credentials" });
        }
        let client_key: Vec<u8> = proof.iter().zip(signature.as_ref()).map(|(a, b)| a ^ b).collect();
        let computed = digest::digest(self.mech.digest(), &client_key);
        if !bool::from(subtle::ConstantTimeEq::ct_eq(computed.as_ref(), c.stored_key.as_slice())) {
            return Err(Failed { why: "invalid client credentials" });
        }
        let server = hmac::Key::new(self.mech.hmac(), &c.server_key);
        let server_signature = hmac::sign(&server, auth_message.as_bytes());
        Ok(Step::Done(format!("v={}", STANDARD.encode(server_signature.as_ref())).into_bytes()))
    }
}

/// RFC 5802 saslname: `=2C` is ',', `=3D` is '=', any other '=' is an error.
fn sasl_name(s: &str) -> Option<String> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('=') {
        out.push_str(&rest[..i]);
        let code = rest.get(i..i + 3)?;
        out.push(match code {
            "=2C" => ',',
            "=3D" => '=',
            _ => return None,
        });
        rest = &rest[i + 3..];
    }
    out.push_str(rest);
    Some(out)
}

#[cfg(test)]
#[path = "sasl_scram_tests.rs"]
mod tests;
