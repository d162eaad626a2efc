//! TLS on every listener (RocketMQ client and VIP ports, Kafka, HA) and on the remoting and HA
//! clients, with rustls, configured as Java's
//! `TlsSystemConfig` is (`tls.server.mode`, `tls.server.certPath`, ..., `tls.enable`).
//!
//! ```text
//! accept -> disabled:   plaintext
//!           permissive: first byte 0x16 (a TLS handshake record) -> TLS, else plaintext
//!           enforcing:  TLS; a plaintext peer fails the handshake and is closed
//! ```
//! A RocketMQ frame starts with its 4-byte length, so a first byte of 0x16 would announce a
//! frame of at least 352 MiB, over any frame limit: the two never mix up (Java's
//! `TlsModeHandler` looks at the same byte). A Kafka frame starts the same way: its size's high
//! byte is at most 0x06 for any frame under `socket.request.max.bytes` (100 MiB), so 0x16 is
//! never a frame the Kafka port would accept. An HA slave's first bytes are an offset report,
//! whose high byte is 0x00 for any CommitLog under 2^56 bytes. With no certificate configured, `tls.test.mode.enable`
//! (Java's default, true) serves a self-signed one made on first use, as Java does.
//! Clients (`tls.enable`) trust any server unless `tls.client.authServer` with
//! `tls.client.trustCertPath`, as Java's test mode does.
//!
//! Settings come from Java's keys ([`TlsSettings::from_keys`], [`tls_settings`] for a config's
//! entries plus `tls.config.file`).
//!
//! May import: `properties` (the `tls.config.file` reader), nothing else of ferrocket's.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use tokio::net::TcpStream;

/// `tls.server.mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum TlsMode {
    Disabled,
    #[default]
    Permissive,
    Enforcing,
}

/// Java's `tls.*` settings, as read from the config file.
#[derive(Clone, Debug, Default)]
pub struct TlsSettings {
    pub mode: TlsMode,
    pub test_mode: bool,
    pub server_cert: Option<PathBuf>,
    pub server_key: Option<PathBuf>,
    /// `none`, `optional` or `require`.
    pub need_client_auth: String,
    pub server_trust: Option<PathBuf>,
    /// `tls.enable`: this process's own connections (broker to NameServer) use TLS.
    pub client_enable: bool,
    pub client_cert: Option<PathBuf>,
    pub client_key: Option<PathBuf>,
    pub client_trust: Option<PathBuf>,
    pub client_auth_server: bool,
}

/// A refused setting: the key and why.
#[derive(Debug)]
pub struct TlsError {
    pub key: &'static str,
    pub reason: String,
}

impl std::fmt::Display for TlsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "config key '{}': {}", self.key, self.reason)
    }
}

/// Java's `tls.*` settings from a config's entries, overridden by the file `tls.config.file`
/// names (Java's `TlsHelper` reads `/etc/rocketmq/tls.properties` by default, when it exists).
/// A bad value or unreadable file refuses start-up naming the key.
pub fn tls_settings(entries: &[(&'static str, String)]) -> Result<TlsSettings, TlsError> {
    let mut values: std::collections::HashMap<String, String> = entries
        .iter()
        .filter(|(k, v)| k.starts_with("tls.") && !v.trim().is_empty())
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect();
    let default_file = std::path::Path::new("/etc/rocketmq/tls.properties");
    let file =
        values.get("tls.config.file").map(PathBuf::from).or_else(|| default_file.exists().then(|| default_file.into()));
    if let Some(file) = file {
        let pairs = crate::properties::read_properties(&file)
            .map_err(|e| refuse("tls.config.file", format!("cannot read config file {}: {e}", file.display())))?;
        values.extend(pairs.into_iter().filter(|(k, v)| k.starts_with("tls.") && !v.trim().is_empty()));
    }
    TlsSettings::from_keys(|k| values.get(k).cloned())
}

impl std::error::Error for TlsError {}

fn refuse(key: &'static str, reason: impl Into<String>) -> TlsError {
    TlsError { key, reason: reason.into() }
}

fn path(v: Option<String>) -> Option<PathBuf> {
    v.map(|s| s.trim().to_owned()).filter(|s| !s.is_empty()).map(PathBuf::from)
}

impl TlsSettings {
    /// Reads Java's keys through `get` (a config file's values; `None` = not set).
    pub fn from_keys(get: impl Fn(&str) -> Option<String>) -> Result<Self, TlsError> {
        let flag = |key: &'static str, default: bool| match get(key) {
            None => Ok(default),
            Some(v) if v.trim().eq_ignore_ascii_case("true") => Ok(true),
            Some(v) if v.trim().eq_ignore_ascii_case("false") => Ok(false),
            Some(v) => Err(refuse(key, format!("'{v}' is not true or false"))),
        };
        let mode = match get("tls.server.mode").map(|m| m.trim().to_ascii_lowercase()).as_deref() {
            None | Some("permissive") => TlsMode::Permissive,
            Some("disabled") => TlsMode::Disabled,
            Some("enforcing") => TlsMode::Enforcing,
            Some(other) => {
                return Err(refuse("tls.server.mode", format!("'{other}' is not disabled, permissive or enforcing")))
            }
        };
        let need_client_auth =
            get("tls.server.need.client.auth").unwrap_or_else(|| "none".into()).trim().to_ascii_lowercase();
        if !matches!(need_client_auth.as_str(), "none" | "optional" | "require") {
            return Err(refuse("tls.server.need.client.auth", "must be none, optional or require"));
        }
        for key in ["tls.server.keyPassword", "tls.client.keyPassword"] {
            if get(key).is_some_and(|v| !v.is_empty()) {
                return Err(refuse(
                    key,
                    "encrypted keys are not supported; give an unencrypted PKCS#8, RSA or EC PEM key",
                ));
            }
        }
        Ok(Self {
            mode,
            test_mode: flag("tls.test.mode.enable", true)?,
            server_cert: path(get("tls.server.certPath")),
            server_key: path(get("tls.server.keyPath")),
            need_client_auth,
            server_trust: path(get("tls.server.trustCertPath")),
            client_enable: flag("tls.enable", false)?,
            client_cert: path(get("tls.client.certPath")),
            client_key: path(get("tls.client.keyPath")),
            client_trust: path(get("tls.client.trustCertPath")),
            client_auth_server: flag("tls.client.authServer", false)?,
        })
    }
}

fn certs(key: &'static str, p: &PathBuf) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs: Result<Vec<_>, _> = CertificateDer::pem_file_iter(p)
        .map_err(|e| refuse(key, format!("cannot read {}: {e}", p.display())))?
        .collect();
    let certs = certs.map_err(|e| refuse(key, format!("{}: {e}", p.display())))?;
    if certs.is_empty() {
        return Err(refuse(key, format!("{} holds no PEM certificate", p.display())));
    }
    Ok(certs)
}

fn private_key(key: &'static str, p: &PathBuf) -> Result<PrivateKeyDer<'static>, TlsError> {
    PrivateKeyDer::from_pem_file(p).map_err(|e| refuse(key, format!("{}: {e}", p.display())))
}

fn roots(key: &'static str, p: &PathBuf) -> Result<Arc<rustls::RootCertStore>, TlsError> {
    let mut store = rustls::RootCertStore::empty();
    for c in certs(key, p)? {
        store.add(c).map_err(|e| refuse(key, format!("{}: {e}", p.display())))?;
    }
    Ok(Arc::new(store))
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The server side: decides per accepted connection whether it speaks TLS.
pub struct TlsServer {
    mode: TlsMode,
    settings: TlsSettings,
    /// Built on first use when it needs a self-signed certificate; at once otherwise.
    acceptor: OnceLock<Result<tokio_rustls::TlsAcceptor, String>>,
    /// Protocols offered by ALPN (gRPC: `h2`); none for the RocketMQ, Kafka and HA ports.
    alpn: Vec<Vec<u8>>,
}

impl TlsServer {
    /// Checks the settings (files readable, key matching the certificate): a bad one refuses
    /// start-up naming the key. `None` when TLS is disabled.
    pub fn new(settings: &TlsSettings) -> Result<Option<Arc<Self>>, TlsError> {
        if settings.mode == TlsMode::Disabled {
            return Ok(None);
        }
        Self::with(settings, Vec::new()).map(Some)
    }

    fn with(settings: &TlsSettings, alpn: Vec<Vec<u8>>) -> Result<Arc<Self>, TlsError> {
        let server = Self { mode: settings.mode, settings: settings.clone(), acceptor: OnceLock::new(), alpn };
        if settings.server_cert.is_some() || !settings.test_mode {
            let acceptor = server.build()?;
            let _ = server.acceptor.set(Ok(acceptor));
        }
        Ok(Arc::new(server))
    }

    /// The same settings, offering `protocols` by ALPN (the gRPC port: `h2`, which gRPC clients
    /// require of a TLS server).
    pub fn with_alpn(&self, protocols: &[&[u8]]) -> Result<Arc<Self>, TlsError> {
        Self::with(&self.settings, protocols.iter().map(|p| p.to_vec()).collect())
    }

    fn build(&self) -> Result<tokio_rustls::TlsAcceptor, TlsError> {
        let s = &self.settings;
        let (chain, key) = match (&s.server_cert, &s.server_key) {
            (Some(c), Some(k)) => (certs("tls.server.certPath", c)?, private_key("tls.server.keyPath", k)?),
            (Some(_), None) => return Err(refuse("tls.server.keyPath", "needed with tls.server.certPath")),
            (None, _) if s.test_mode => {
                let made = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).map_err(|e| {
                    refuse("tls.server.certPath", format!("cannot make a self-signed certificate: {e}"))
                })?;
                let key = PrivateKeyDer::try_from(made.key_pair.serialize_der())
                    .map_err(|e| refuse("tls.server.keyPath", e))?;
                (vec![made.cert.der().clone()], key)
            }
            (None, _) => return Err(refuse("tls.server.certPath", "needed when tls.test.mode.enable=false")),
        };
        let builder = rustls::ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| refuse("tls.server.mode", e.to_string()))?;
        let builder = match (s.need_client_auth.as_str(), &s.server_trust) {
            ("none", _) => builder.with_no_client_auth(),
            (_, None) => return Err(refuse("tls.server.trustCertPath", "needed to check client certificates")),
            (auth, Some(trust)) => {
                let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                    roots("tls.server.trustCertPath", trust)?,
                    provider(),
                );
                let verifier = if auth == "optional" { verifier.allow_unauthenticated() } else { verifier };
                let verifier = verifier.build().map_err(|e| refuse("tls.server.trustCertPath", e.to_string()))?;
                builder.with_client_cert_verifier(verifier)
            }
        };
        let mut config = builder
            .with_single_cert(chain, key)
            .map_err(|e| refuse("tls.server.keyPath", format!("does not match tls.server.certPath: {e}")))?;
        config.alpn_protocols = self.alpn.clone();
        Ok(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
    }

    fn acceptor(&self) -> std::io::Result<tokio_rustls::TlsAcceptor> {
        self.acceptor.get_or_init(|| self.build().map_err(|e| e.to_string())).clone().map_err(std::io::Error::other)
    }

    /// Whether the peer speaks TLS: always when enforcing; when permissive, whether its first
    /// byte (waited for, not consumed) opens a TLS handshake record.
    pub async fn starts_tls(&self, stream: &TcpStream) -> std::io::Result<bool> {
        if self.mode == TlsMode::Enforcing {
            return Ok(true);
        }
        let mut first = [0u8; 1];
        let n = stream.peek(&mut first).await?;
        Ok(n == 1 && first[0] == 0x16)
    }

    /// The server side of the TLS handshake.
    pub async fn handshake(&self, stream: TcpStream) -> std::io::Result<tokio_rustls::server::TlsStream<TcpStream>> {
        self.acceptor()?.accept(stream).await
    }
}

/// The client side (`tls.enable`): connects to servers over TLS.
pub struct TlsClient {
    connector: tokio_rustls::TlsConnector,
}

impl TlsClient {
    /// `None` unless `tls.enable`.
    pub fn new(settings: &TlsSettings) -> Result<Option<Arc<Self>>, TlsError> {
        if !settings.client_enable {
            return Ok(None);
        }
        let builder = rustls::ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| refuse("tls.enable", e.to_string()))?;
        let builder = match (&settings.client_trust, settings.client_auth_server) {
            (Some(trust), true) => builder.with_root_certificates(roots("tls.client.trustCertPath", trust)?),
            (None, true) => return Err(refuse("tls.client.trustCertPath", "needed with tls.client.authServer=true")),
            // Java's test mode: any server certificate is accepted.
            (_, false) => builder.dangerous().with_custom_certificate_verifier(Arc::new(AnyServer(provider()))),
        };
        let config = match (&settings.client_cert, &settings.client_key) {
            (Some(c), Some(k)) => builder
                .with_client_auth_cert(certs("tls.client.certPath", c)?, private_key("tls.client.keyPath", k)?)
                .map_err(|e| refuse("tls.client.keyPath", e.to_string()))?,
            _ => builder.with_no_client_auth(),
        };
        Ok(Some(Arc::new(Self { connector: tokio_rustls::TlsConnector::from(Arc::new(config)) })))
    }

    /// The TLS handshake on a connected stream; the server name is its IP (not checked unless
    /// `tls.client.authServer`).
    pub async fn connect(&self, stream: TcpStream) -> std::io::Result<tokio_rustls::client::TlsStream<TcpStream>> {
        let ip = stream.peer_addr()?.ip();
        self.connector.connect(ServerName::IpAddress(ip.into()), stream).await
    }
}

/// Accepts any server certificate (Java's `tls.test.mode.enable` client: InsecureTrustManager);
/// signatures are still checked, so the handshake itself is sound.
#[derive(Debug)]
struct AnyServer(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for AnyServer {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
