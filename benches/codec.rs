//! Remoting codec: decoding and encoding frames with JSON and binary headers, and route JSON.

use bytes::BytesMut;
use criterion::{criterion_group, criterion_main, Criterion};
use ferrocket::protocol::body::route::{BrokerData, QueueData, RouteJson, TopicRouteData};
use ferrocket::protocol::frame::encode_frame;
use ferrocket::protocol::{RemotingCodec, RemotingCommand, RequestCode, SerializeType};
use tokio_util::codec::Decoder;

/// The binary's allocator: allocation is a large part of decoding, and glibc's costs differ.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn send_request(ser: SerializeType) -> RemotingCommand {
    let mut cmd = RemotingCommand::request(RequestCode::SEND_MESSAGE_V2);
    for (k, v) in [
        ("a", "PG"),
        ("b", "TopicTest"),
        ("c", "TBW102"),
        ("d", "4"),
        ("e", "2"),
        ("f", "0"),
        ("g", "1700000000000"),
        ("h", "0"),
        ("i", "UNIQ_KEY\u{1}AC110001\u{2}WAIT\u{1}true\u{2}TAGS\u{1}TagA\u{2}"),
        ("j", "0"),
        ("k", "false"),
        ("m", "false"),
    ] {
        cmd.ext_fields.insert(k.into(), v.into());
    }
    cmd.body = bytes::Bytes::from(vec![b'x'; 1024]);
    cmd.serialize_type = ser;
    cmd
}

fn bench_frames(c: &mut Criterion) {
    for ser in [SerializeType::Json, SerializeType::RocketMq] {
        let cmd = send_request(ser);
        let mut encoded = BytesMut::new();
        encode_frame(&cmd, &mut encoded);
        c.bench_function(&format!("decode_send_v2/{}", ser.name()), |b| {
            b.iter(|| RemotingCodec::default().decode(&mut encoded.clone()).unwrap())
        });
        c.bench_function(&format!("encode_send_v2/{}", ser.name()), |b| {
            b.iter(|| {
                let mut out = BytesMut::with_capacity(2048);
                encode_frame(&cmd, &mut out);
                out
            })
        });
    }
}

fn bench_route(c: &mut Criterion) {
    let route = TopicRouteData {
        order_topic_conf: None,
        queue_datas: (0..4)
            .map(|i| QueueData {
                broker_name: format!("broker-{i}"),
                read_queue_nums: 8,
                write_queue_nums: 8,
                perm: 6,
                topic_sys_flag: 0,
            })
            .collect(),
        broker_datas: (0..4)
            .map(|i| BrokerData {
                cluster: "DefaultCluster".into(),
                broker_name: format!("broker-{i}"),
                broker_addrs: [(0, format!("10.0.0.{i}:10911")), (1, format!("10.0.1.{i}:10911"))].into(),
                enable_acting_master: false,
                zone_name: None,
            })
            .collect(),
        filter_server_table: Default::default(),
    };
    c.bench_function("route_json/standard", |b| b.iter(|| route.to_json(RouteJson::Standard)));
}

criterion_group!(benches, bench_frames, bench_route);
criterion_main!(benches);
