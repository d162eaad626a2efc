//! TLS on the remoting ports (`tls.server.mode`, `tls.server.certPath`/`keyPath`) and on the
//! broker's own connections (`tls.enable`), with certificates made here: enforcing refuses a
//! plaintext client and serves a TLS one; permissive serves both on one port; a broker with
//! `tls.enable` registers with an enforcing NameServer; bad settings refuse start-up naming the key.

use std::sync::Arc;
use std::time::Duration;

use ferrocket::net::tls::{TlsClient, TlsSettings};
use ferrocket::protocol::{FrameLimits, RequestCode, ResponseCode};
use ferrocket::remoting::RemotingClient;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::broker::{call_addr, send, start_broker_on};
use super::support::*;

/// A self-signed certificate and its key, as PEM files in `dir`.
fn cert_files(dir: &std::path::Path) -> (String, String) {
    let made = rcgen::generate_simple_self_signed(vec!["localhost".to_owned(), "127.0.0.1".to_owned()]).unwrap();
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert, made.cert.pem()).unwrap();
    std::fs::write(&key, made.key_pair.serialize_pem()).unwrap();
    (cert.display().to_string(), key.display().to_string())
}

fn tls_client() -> Client {
    let settings = TlsSettings::from_keys(|k| (k == "tls.enable").then(|| "true".to_owned())).unwrap();
    RemotingClient::new(Arc::new(NoHandler), FrameLimits::default(), TaskTracker::new(), CancellationToken::new())
        .with_tls(TlsClient::new(&settings).unwrap())
}

async fn try_call(c: &Client, addr: &str) -> Result<ResponseCode, String> {
    let req = request(RequestCode::GET_BROKER_RUNTIME_INFO, &[]);
    c.invoke(addr, req, Duration::from_secs(3)).await.map(|r| r.response_code()).map_err(|e| e.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enforcing_refuses_plaintext_and_permissive_serves_both() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = cert_files(dir.path());
    let ns = TestNamesrv::start(|_| {}).await;
    let (c1, k1) = (cert.clone(), key.clone());
    let store = tempfile::tempdir().unwrap();
    let b = start_broker_on(&ns.addr.to_string(), store.path(), |c| {
        c.tls.server_mode = "enforcing".into();
        c.tls.server_cert_path = c1;
        c.tls.server_key_path = k1;
    })
    .await;
    assert_eq!(try_call(&tls_client(), &b.addr).await, Ok(ResponseCode::SUCCESS), "TLS client, enforcing");
    let send_tls = call_addr(&tls_client(), &b.addr, send("TlsT", 0, b"over tls", "A")).await;
    assert_eq!(send_tls.response_code(), ResponseCode::SUCCESS);
    assert!(try_call(&client(), &b.addr).await.is_err(), "a plaintext client must be refused in enforcing mode");
    b.stop().await;

    let store = tempfile::tempdir().unwrap();
    let b = start_broker_on(&ns.addr.to_string(), store.path(), |c| {
        c.tls.server_mode = "permissive".into();
        c.tls.server_cert_path = cert;
        c.tls.server_key_path = key;
    })
    .await;
    assert_eq!(try_call(&tls_client(), &b.addr).await, Ok(ResponseCode::SUCCESS), "TLS client, permissive");
    assert_eq!(try_call(&client(), &b.addr).await, Ok(ResponseCode::SUCCESS), "plaintext client, permissive");
    b.stop().await;

    // No certificate configured: test mode (Java's default) serves a self-signed one.
    let store = tempfile::tempdir().unwrap();
    let b = start_broker_on(&ns.addr.to_string(), store.path(), |_| {}).await;
    assert_eq!(try_call(&tls_client(), &b.addr).await, Ok(ResponseCode::SUCCESS), "TLS client, default settings");
    assert_eq!(try_call(&client(), &b.addr).await, Ok(ResponseCode::SUCCESS), "plaintext client, default settings");
    b.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_with_tls_enable_registers_with_an_enforcing_namesrv() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = cert_files(dir.path());
    let ns = TestNamesrv::start(|c| {
        c.tls.server_mode = "enforcing".into();
        c.tls.server_cert_path = cert;
        c.tls.server_key_path = key;
    })
    .await;
    let store = tempfile::tempdir().unwrap();
    let b = start_broker_on(&ns.addr.to_string(), store.path(), |c| c.tls.enable = "true".into()).await;
    let (tls, addr) = (tls_client(), ns.addr.to_string());
    let listed = eventually(Duration::from_secs(10), || async {
        let info = tls.invoke(&addr, request(RequestCode::GET_BROKER_CLUSTER_INFO, &[]), Duration::from_secs(3)).await;
        info.is_ok_and(|r| String::from_utf8_lossy(&r.body).contains("broker-t"))
    })
    .await;
    assert!(listed, "the broker never registered over TLS");
    assert!(try_call(&client(), &addr).await.is_err(), "the enforcing NameServer served a plaintext client");
    b.stop().await;
}

#[test]
fn bad_tls_settings_name_the_key() {
    let get = |pairs: &'static [(&'static str, &'static str)]| {
        move |k: &str| pairs.iter().find(|(key, _)| *key == k).map(|(_, v)| (*v).to_owned())
    };
    let err = TlsSettings::from_keys(get(&[("tls.server.mode", "sometimes")])).unwrap_err();
    assert_eq!(err.key, "tls.server.mode");
    let err = TlsSettings::from_keys(get(&[("tls.server.keyPassword", "secret")])).unwrap_err();
    assert_eq!(err.key, "tls.server.keyPassword");
    let missing = TlsSettings::from_keys(get(&[
        ("tls.server.certPath", "/nonexistent/cert.pem"),
        ("tls.server.keyPath", "/nonexistent/key.pem"),
    ]))
    .unwrap();
    let err = ferrocket::net::tls::TlsServer::new(&missing).err().expect("a missing certificate file must be refused");
    assert_eq!(err.key, "tls.server.certPath");
    let err = TlsClient::new(
        &TlsSettings::from_keys(get(&[("tls.enable", "true"), ("tls.client.authServer", "true")])).unwrap(),
    )
    .err()
    .expect("authServer without a trust path must be refused");
    assert_eq!(err.key, "tls.client.trustCertPath");
}
