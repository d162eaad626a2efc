//! Compiles the vendored apache.rocketmq.v2 protos (proto/, see proto/README.md) into the gRPC
//! front end's messages and service (src/grpc/pb.rs includes them), with the protoc that
//! protoc-bin-vendored ships: no system protoc needed. Message bodies are `bytes::Bytes`.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protoc = protoc_bin_vendored::protoc_bin_path()?;
    let include = protoc_bin_vendored::include_path()?;
    std::env::set_var("PROTOC", protoc);
    println!("cargo:rerun-if-changed=proto");
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        // RPCs without a handler answer UNIMPLEMENTED (Pull/Offset/SyncLiteSubscription, and
        // until POP lands ReceiveMessage, Ack, ChangeInvisibleDuration, ForwardToDLQ).
        .generate_default_stubs(true)
        .bytes(".apache.rocketmq.v2")
        .compile_protos(
            &[
                std::path::PathBuf::from("proto/apache/rocketmq/v2/service.proto"),
                std::path::PathBuf::from("proto/apache/rocketmq/v2/definition.proto"),
            ],
            &[std::path::PathBuf::from("proto"), include],
        )?;
    Ok(())
}
