//! Unit tests of `broker::timer` (through `use super::*`): they may import what it may, plus test crates.

use super::*;
use crate::model::message::properties_to_string;

fn service(f: impl FnOnce(&mut BrokerConfig)) -> TimerService {
    let dir = tempfile::tempdir().unwrap();
    let mut c = BrokerConfig { store_path_root_dir: dir.path().to_owned(), ..BrokerConfig::default() };
    f(&mut c);
    // The files are not needed to divert; a slave does not open them.
    c.broker_role = "SLAVE".into();
    TimerService::open(&c).unwrap()
}

fn msg(props: &[(&str, &str)]) -> MessageToStore {
    MessageToStore {
        topic: "T".into(),
        queue_id: 3,
        flag: 0,
        body: bytes::Bytes::from_static(b"b"),
        properties: properties_to_string(props.iter().copied()),
        tags_code: 0,
        born_timestamp: 0,
        born_host: "127.0.0.1:1".parse().unwrap(),
        store_host: "127.0.0.1:2".parse().unwrap(),
        sys_flag: 0,
        reconsume_times: 0,
        prepared_transaction_offset: 0,
    }
}

fn prop<'a>(m: &'a MessageToStore, k: &str) -> Option<&'a str> {
    message::property_value(&m.properties, k)
}

#[test]
fn a_timer_message_goes_to_the_timer_topic_with_its_slot() {
    let t = service(|_| {});
    let before = crate::store::now_ms();
    let mut m = msg(&[("TIMER_DELAY_SEC", "10"), ("UNIQ_KEY", "U")]);
    t.divert(&mut m).unwrap();
    let after = crate::store::now_ms();
    assert_eq!((m.topic.as_str(), m.queue_id), (TIMER_TOPIC, 0));
    assert_eq!((prop(&m, "REAL_TOPIC"), prop(&m, "REAL_QID")), (Some("T"), Some("3")));
    assert_eq!(prop(&m, "TIMER_DELAY_SEC"), Some("10"), "the request is kept");
    let slot: i64 = prop(&m, "TIMER_OUT_MS").unwrap().parse().unwrap();
    assert_eq!(slot % 1000, 0, "a slot is a multiple of the precision");
    // Fires at slot + 1 s: the first second boundary at or after the requested time.
    assert!(slot + 1000 >= before + 10_000 && slot < after + 10_000, "slot {slot}, sent {before}..{after}");

    let handle = recall_handle(&m, "broker-a").unwrap();
    let raw = base64::engine::general_purpose::URL_SAFE.decode(handle).unwrap();
    assert_eq!(String::from_utf8(raw).unwrap(), format!("v1 T broker-a {} U", slot + 1));
}

#[test]
fn precedence_rounding_and_the_limits_are_javas() {
    let t = service(|c| c.timer_precision_ms = 300);
    assert_eq!(t.precision_ms, 200, "snapped like Java's setter");
    // TIMER_DELAY_SEC wins over TIMER_DELIVER_MS; an exact multiple goes one slot earlier.
    let at = (crate::store::now_ms() / 200 + 100) * 200;
    let mut m = msg(&[("TIMER_DELIVER_MS", &at.to_string())]);
    t.divert(&mut m).unwrap();
    assert_eq!(prop(&m, "TIMER_OUT_MS"), Some((at - 200).to_string().as_str()));
    let mut m = msg(&[("TIMER_DELIVER_MS", &(at + 1).to_string()), ("TIMER_DELAY_SEC", "100000000")]);
    let (code, remark) = t.divert(&mut m).unwrap_err();
    assert_eq!(code, ResponseCode::MESSAGE_ILLEGAL);
    assert!(remark.contains("max delay 259200000ms"), "{remark}");
    assert_eq!(m.topic, "T", "nothing changed");
    // Exactly the maximum is accepted, a little more is not.
    let mut m = msg(&[("TIMER_DELAY_MS", "259200000")]);
    assert!(t.divert(&mut m).is_ok());
    let mut m = msg(&[("TIMER_DELAY_MS", "259200500")]);
    assert_eq!(t.divert(&mut m).unwrap_err().0, ResponseCode::MESSAGE_ILLEGAL);
    let mut m = msg(&[("TIMER_DELAY_MS", "soon")]);
    assert_eq!(t.divert(&mut m).unwrap_err().0, ResponseCode::MESSAGE_ILLEGAL);
}

#[test]
fn past_times_delay_levels_and_delivered_messages_are_not_diverted() {
    let t = service(|_| {});
    for props in [
        vec![("TIMER_DELIVER_MS", "1000")],
        vec![("TIMER_DELAY_SEC", "0")],
        vec![("TIMER_DELAY_SEC", "5"), ("TIMER_OUT_MS", "123")],
        vec![("ORDINARY", "1")],
    ] {
        let mut m = msg(&props);
        let before = m.properties.clone();
        t.divert(&mut m).unwrap();
        assert_eq!((m.topic.as_str(), m.properties.as_str()), ("T", before.as_str()), "{props:?}");
    }
    let mut m = msg(&[("DELAY", "3"), ("TIMER_DELAY_SEC", "5"), ("TIMER_DELIVER_MS", "9")]);
    t.divert(&mut m).unwrap();
    assert_eq!(m.topic, "T");
    assert_eq!((prop(&m, "DELAY"), prop(&m, "TIMER_DELAY_SEC"), prop(&m, "TIMER_DELIVER_MS")), (Some("3"), None, None));
    let mut m = msg(&[("TIMER_DELIVER_MS", "1000"), ("TIMER_DEL_UNIQKEY", "T+U")]);
    assert_eq!(t.divert(&mut m).unwrap_err().0, ResponseCode::MESSAGE_ILLEGAL, "a recall for the past");
}

#[test]
fn a_disabled_wheel_refuses_timer_messages() {
    let t = service(|c| c.timer_wheel_enable = false);
    let mut m = msg(&[("TIMER_DELAY_SEC", "5")]);
    let (code, remark) = t.divert(&mut m).unwrap_err();
    assert_eq!(code, ResponseCode::SYSTEM_ERROR);
    assert_eq!(remark, "accurate timer message is not enabled, timerWheelEnable is false");
}
