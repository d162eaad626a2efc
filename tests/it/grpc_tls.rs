//! TLS and plaintext on the one gRPC port (`tls.server.mode`, the broker's keys): permissive
//! serves both (the first byte decides), with the configured certificate and ALPN h2 (which
//! gRPC clients need); enforcing serves TLS only.

use std::sync::Arc;

use ferrocket::grpc::pb::messaging_service_client::MessagingServiceClient;
use ferrocket::grpc::pb::*;
use hyper_util::rt::TokioIo;
use rustls::pki_types::{CertificateDer, ServerName};
use tonic::transport::{Channel, Endpoint};

use super::broker_harness::TestBroker;
use super::grpc::{grpc_broker, message, plain_client, send, topic, with_id};

async fn tls_broker(dir: &std::path::Path, mode: &str) -> (TestBroker, CertificateDer<'static>) {
    let made = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert, made.cert.pem()).unwrap();
    std::fs::write(&key, made.key_pair.serialize_pem()).unwrap();
    let mode = mode.to_owned();
    let b = grpc_broker(&dir.join("store"), move |c| {
        c.tls.server_mode = mode;
        c.tls.server_cert_path = cert.display().to_string();
        c.tls.server_key_path = key.display().to_string();
    })
    .await;
    (b, made.cert.der().clone())
}

/// A gRPC client over TLS trusting `trusted` only, offering h2; also returns what ALPN chose.
async fn tls_client(
    port: u16,
    trusted: &CertificateDer<'static>,
) -> (MessagingServiceClient<Channel>, Option<Vec<u8>>) {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(trusted.clone()).unwrap();
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec()];
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let (alpn_tx, alpn_rx) = std::sync::mpsc::channel();
    let channel = Endpoint::from_static("http://localhost")
        .connect_with_connector(tower::service_fn(move |_| {
            let (connector, alpn_tx) = (connector.clone(), alpn_tx.clone());
            async move {
                let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
                let tls = connector.connect(ServerName::try_from("localhost").unwrap(), tcp).await?;
                let _ = alpn_tx.send(tls.get_ref().1.alpn_protocol().map(<[u8]>::to_vec));
                Ok::<_, std::io::Error>(TokioIo::new(tls))
            }
        }))
        .await
        .expect("TLS gRPC connect");
    (MessagingServiceClient::new(channel), alpn_rx.recv().ok().flatten())
}

fn route_ok(r: &QueryRouteResponse) -> bool {
    r.status.as_ref().is_some_and(|s| s.code == Code::Ok as i32) && !r.message_queues.is_empty()
}

#[tokio::test]
async fn permissive_serves_tls_with_h2_and_plaintext_on_one_port() {
    let dir = tempfile::tempdir().unwrap();
    let (b, cert) = tls_broker(dir.path(), "permissive").await;
    topic(&b, "GrpcTls", 2, None);
    let port = b.grpc_port.unwrap();
    let (mut tls, alpn) = tls_client(port, &cert).await;
    assert_eq!(alpn.as_deref(), Some(&b"h2"[..]), "ALPN h2");
    let req = || {
        with_id(QueryRouteRequest {
            topic: Some(Resource { resource_namespace: String::new(), name: "GrpcTls".into() }),
            endpoints: None,
        })
    };
    assert!(route_ok(&tls.query_route(req()).await.unwrap().into_inner()));
    let r = send(&mut tls, vec![message("GrpcTls", "over-tls", b"secret")]).await;
    assert_eq!(r.status.unwrap().code, Code::Ok as i32);
    let mut plain = plain_client(&b).await;
    assert!(route_ok(&plain.query_route(req()).await.unwrap().into_inner()));
    let r = send(&mut plain, vec![message("GrpcTls", "plain", b"open")]).await;
    assert_eq!(r.status.unwrap().code, Code::Ok as i32);
    b.inner.store.await_dispatched(std::time::Duration::from_secs(10)).await;
    let stored: i64 = (0..2).map(|q| b.inner.store.max_offset_in_queue("GrpcTls", q)).sum();
    assert_eq!(stored, 2);
    b.stop().await;
}

#[tokio::test]
async fn enforcing_refuses_plaintext() {
    let dir = tempfile::tempdir().unwrap();
    let (b, cert) = tls_broker(dir.path(), "enforcing").await;
    topic(&b, "GrpcTlsOnly", 1, None);
    let port = b.grpc_port.unwrap();
    let (mut tls, _) = tls_client(port, &cert).await;
    let req = || {
        with_id(QueryRouteRequest {
            topic: Some(Resource { resource_namespace: String::new(), name: "GrpcTlsOnly".into() }),
            endpoints: None,
        })
    };
    assert!(route_ok(&tls.query_route(req()).await.unwrap().into_inner()));
    // Plaintext HTTP/2 to an enforcing port: the TLS handshake fails and the call errors.
    let refused = match Endpoint::from_shared(format!("http://127.0.0.1:{port}")).unwrap().connect().await {
        Err(_) => true,
        Ok(channel) => MessagingServiceClient::new(channel).query_route(req()).await.is_err(),
    };
    assert!(refused, "a plaintext client is not served");
    b.stop().await;
}
