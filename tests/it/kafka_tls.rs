//! TLS on the Kafka port (`tls.server.mode`, the RocketMQ port's keys): a tokio-rustls client
//! does ApiVersions, CreateTopics, a produce and a fetch over TLS against an enforcing broker;
//! enforcing refuses a plaintext client; permissive serves both on one port. And the listener's
//! connection metrics count what happened, per listener.

use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, StrBytes};
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use super::broker_harness::{start_broker, TestBroker, KAFKA_ANY_PORT};
use super::kafka::{batch, first, name, produce};
use super::support::eventually;

/// A self-signed certificate for localhost and 127.0.0.1, as PEM files in `dir`, and its DER.
fn cert_files(dir: &std::path::Path) -> (String, String, CertificateDer<'static>) {
    let made = rcgen::generate_simple_self_signed(vec!["localhost".to_owned(), "127.0.0.1".to_owned()]).unwrap();
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert, made.cert.pem()).unwrap();
    std::fs::write(&key, made.key_pair.serialize_pem()).unwrap();
    (cert.display().to_string(), key.display().to_string(), made.cert.der().clone())
}

async fn tls_broker(dir: &std::path::Path, mode: &str) -> (TestBroker, u16, CertificateDer<'static>) {
    let (cert, key, der) = cert_files(dir);
    let store = dir.join("store");
    let mode = mode.to_owned();
    let b = start_broker(&store, move |c| {
        // Labels of its own: the metrics registry is the test process's.
        c.broker_cluster_name = format!("KafkaTls-{mode}");
        c.kafka_listen_port = KAFKA_ANY_PORT;
        c.tls.server_mode = mode;
        c.tls.server_cert_path = cert;
        c.tls.server_key_path = key;
    })
    .await;
    let port = b.kafka_port.expect("a Kafka listener");
    (b, port, der)
}

/// A TLS connection that checks the server's certificate against `trusted`.
async fn tls_connect(port: u16, trusted: &CertificateDer<'static>) -> tokio_rustls::client::TlsStream<TcpStream> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(trusted.clone()).unwrap();
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let tcp = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    connector.connect(ServerName::try_from("localhost").unwrap(), tcp).await.expect("TLS handshake")
}

/// One request and its answer, or `None` when the broker closed the connection.
async fn call<S, Resp>(s: &mut S, key: ApiKey, version: i16, body: &(impl Encodable + HeaderVersion)) -> Option<Resp>
where
    S: AsyncRead + AsyncWrite + Unpin,
    Resp: Decodable,
{
    let header = RequestHeader::default()
        .with_request_api_key(key as i16)
        .with_request_api_version(version)
        .with_correlation_id(7)
        .with_client_id(Some(StrBytes::from_static_str("it-tls")));
    let mut buf = BytesMut::new();
    header.encode(&mut buf, key.request_header_version(version)).unwrap();
    body.encode(&mut buf, version).unwrap();
    let mut frame = (buf.len() as i32).to_be_bytes().to_vec();
    frame.extend_from_slice(&buf);
    s.write_all(&frame).await.ok()?;
    s.flush().await.ok()?;
    let size = tokio::time::timeout(Duration::from_secs(20), s.read_i32()).await.ok()?.ok()?;
    let mut body = vec![0; size as usize];
    s.read_exact(&mut body).await.ok()?;
    let mut body = Bytes::from(body);
    let header = ResponseHeader::decode(&mut body, key.response_header_version(version)).unwrap();
    assert_eq!(header.correlation_id, 7);
    Some(Resp::decode(&mut body, version).unwrap())
}

/// The value of the sample of `name` whose labels include every one of `labels`.
fn sample(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    text.lines().filter(|l| !l.starts_with('#')).find_map(|l| {
        let (labels_part, value) = l.strip_prefix(name)?.strip_prefix('{')?.split_once("} ")?;
        labels
            .iter()
            .all(|(k, v)| labels_part.split(',').any(|kv| kv == format!("{k}=\"{v}\"")))
            .then(|| value.trim().parse().ok())?
    })
}

async fn api_versions<S: AsyncRead + AsyncWrite + Unpin>(s: &mut S) -> Option<i16> {
    let r: ApiVersionsResponse = call(s, ApiKey::ApiVersions, 3, &ApiVersionsRequest::default()).await?;
    Some(r.error_code)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kafka_over_tls_produces_and_fetches_and_enforcing_refuses_plaintext() {
    let dir = tempfile::tempdir().unwrap();
    let (b, port, cert) = tls_broker(dir.path(), "enforcing").await;
    let mut s = tls_connect(port, &cert).await;
    assert_eq!(api_versions(&mut s).await, Some(0), "ApiVersions over TLS");
    let create = CreateTopicsRequest::default().with_topics(vec![create_topics_request::CreatableTopic::default()
        .with_name(name("tls-topic"))
        .with_num_partitions(1)
        .with_replication_factor(1)]);
    let r: CreateTopicsResponse = call(&mut s, ApiKey::CreateTopics, 7, &create).await.unwrap();
    assert_eq!(r.topics[0].error_code, 0, "{:?}", r.topics[0].error_message);
    let r: ProduceResponse = call(&mut s, ApiKey::Produce, 9, &produce("tls-topic", 1, batch(3, None))).await.unwrap();
    assert_eq!(first(&r), (0, 0), "three records stored over TLS");
    let fetch = FetchRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_max_wait_ms(5000)
        .with_min_bytes(1)
        .with_max_bytes(1 << 20)
        .with_topics(vec![fetch_request::FetchTopic::default().with_topic(name("tls-topic")).with_partitions(vec![
            fetch_request::FetchPartition::default().with_fetch_offset(0).with_partition_max_bytes(1 << 20),
        ])]);
    let r: FetchResponse = call(&mut s, ApiKey::Fetch, 12, &fetch).await.unwrap();
    let part = &r.responses[0].partitions[0];
    assert_eq!((part.error_code, part.high_watermark), (0, 3));
    let records = part.records.clone().expect("records");
    let batch = ferrocket::kafka::records::parse_one_batch(records, 1 << 20).unwrap();
    let values: Vec<_> = ferrocket::kafka::records::records(&batch).unwrap().into_iter().map(|r| r.value).collect();
    assert_eq!(values, (0..3).map(|i| Some(Bytes::from(format!("v{i}")))).collect::<Vec<_>>());

    // A plaintext Kafka client: its frame is not a TLS ClientHello, the handshake fails and the
    // broker closes the connection without an answer.
    let mut plain = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    assert_eq!(api_versions(&mut plain).await, None, "enforcing must refuse a plaintext client");

    // The Kafka listener's connection metrics: two accepted, one refused at the handshake, the
    // TLS one still open.
    let kafka = |name: &'static str, more: &'static [(&'static str, &'static str)]| {
        let mut labels = vec![("cluster", "KafkaTls-enforcing"), ("listener", "kafka")];
        labels.extend_from_slice(more);
        sample(&ferrocket::telemetry::render(), name, &labels)
    };
    let counted = eventually(Duration::from_secs(10), || async {
        kafka("ferrocket_connections_refused_total", &[("reason", "handshake")]) == Some(1.0)
    })
    .await;
    assert!(counted, "refusal not counted: {}", ferrocket::telemetry::render());
    assert_eq!(kafka("ferrocket_connections_accepted_total", &[]), Some(2.0));
    assert_eq!(kafka("ferrocket_connections_refused_total", &[("reason", "idle")]), Some(0.0));
    assert_eq!(kafka("ferrocket_connections", &[]), Some(1.0), "the TLS connection is open");
    drop(s);
    b.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permissive_serves_tls_and_plaintext_on_one_kafka_port() {
    let dir = tempfile::tempdir().unwrap();
    let (b, port, cert) = tls_broker(dir.path(), "permissive").await;
    let mut s = tls_connect(port, &cert).await;
    assert_eq!(api_versions(&mut s).await, Some(0), "TLS client, permissive");
    let mut plain = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    assert_eq!(api_versions(&mut plain).await, Some(0), "plaintext client, permissive");
    b.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disabled_serves_plaintext_only_on_the_kafka_port() {
    let dir = tempfile::tempdir().unwrap();
    let (b, port, _) = tls_broker(dir.path(), "disabled").await;
    let mut plain = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    assert_eq!(api_versions(&mut plain).await, Some(0), "plaintext client, disabled");
    b.stop().await;
}
