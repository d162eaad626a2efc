//! QUERY_MESSAGE (12) by key or unique key, VIEW_MESSAGE_BY_ID (33) by CommitLog offset.
//!
//! May import: `protocol` and modules of `broker/`; the area's rule is its line in
//! docs/architecture.md.

use super::{fail, ok, Handled};
use crate::broker::BrokerInner;
use crate::protocol::header::broker::{
    QueryMessageRequestHeader, QueryMessageResponseHeader, ViewMessageRequestHeader,
};
use crate::protocol::header::CommandHeader;
use crate::protocol::{RemotingCommand, ResponseCode};

pub fn query_message(b: &BrokerInner, req: &RemotingCommand) -> Handled {
    let h = QueryMessageRequestHeader::decode(&req.ext_fields)?;
    let unique = req.ext_fields.get("_UNIQUE_KEY_QUERY").is_some_and(|v| v == "true");
    let max = if unique { b.live.config().default_query_max_num } else { h.max_num.max(1) as usize };
    let r = b.store.query_message(&h.topic, &h.key, max, h.begin_timestamp, h.end_timestamp);
    if r.messages.is_empty() {
        return fail(ResponseCode::QUERY_NOT_FOUND, "can not find message, maybe time range not correct");
    }
    let mut resp = ok(req);
    QueryMessageResponseHeader {
        index_last_update_timestamp: r.index_last_update_timestamp,
        index_last_update_phyoffset: r.index_last_update_phyoffset,
    }
    .encode(&mut resp.ext_fields);
    resp.body_parts = r.messages.into_iter().map(|m| m.into_bytes()).collect();
    Ok(Some(resp))
}

pub fn view_message_by_id(b: &BrokerInner, req: &RemotingCommand) -> Handled {
    let h = ViewMessageRequestHeader::decode(&req.ext_fields)?;
    match b.store.named_record(h.offset) {
        Some(record) => {
            let mut resp = ok(req);
            resp.body_parts = vec![record.into_bytes()];
            Ok(Some(resp))
        }
        None => fail(ResponseCode::SYSTEM_ERROR, format!("can not find message by the offset, {}", h.offset)),
    }
}
