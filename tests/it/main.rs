//! Integration tests: servers on 127.0.0.1:0, driven over real TCP.

mod acl;
mod admin;
mod bad_input;
mod bench;
mod broker;
mod broker_harness;
mod config_files;
mod crash;
mod golden;
mod ha;
mod java_config;
mod kafka;
mod layering;
mod metrics;
mod namesrv;
mod parked_pulls;
mod read_after_send;
mod request_tasks;
mod send_flags;
mod store;
mod store_retention;
mod subscription_refresh;
mod support;
mod timers;
mod tls;
mod transactions;
