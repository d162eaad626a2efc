//! What both halves of Kafka authorization (`authz.rs`: topics, `authz_groups.rs`: groups and
//! admin) share: the [`Gate`] a check hands the connection, and the helpers that split a request
//! into its allowed and refused parts and merge the refusals into the handler's answer.
//!
//! May import: the Kafka codec, `super::api`.

use bytes::{Buf, BytesMut};
use kafka_protocol::messages::ResponseHeader;
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, StrBytes};

use super::api::{reply, Reply, Request};

/// What the connection does with a request after the check.
pub enum Gate {
    /// Call the handler with the (possibly narrowed) request.
    Pass,
    /// Answered here; the handler is not called.
    Answer(Reply),
    /// Call the handler with the narrowed request, then add the refused parts to its answer.
    Patch(Patch),
    /// Close the connection (the reason, for the WARN line).
    Close(String),
}

pub type Patch = Box<dyn FnOnce(&Request, BytesMut) -> anyhow::Result<BytesMut> + Send>;

/// `(allowed, refused)` of `items` by `allowed`, logging each refusal.
pub(super) fn split<T>(
    items: Vec<T>,
    name: impl Fn(&T) -> &str,
    allowed: impl Fn(&str) -> Result<(), String>,
    log: &dyn Fn(&str, &str),
) -> (Vec<T>, Vec<T>) {
    let (mut ok, mut no) = (Vec::new(), Vec::new());
    for item in items {
        match allowed(name(&item)) {
            Ok(()) => ok.push(item),
            Err(why) => {
                log(name(&item), &why);
                no.push(item);
            }
        }
    }
    (ok, no)
}

/// Decodes the handler's answer frame, lets `f` change it, encodes it again.
pub(super) fn patched<R: Decodable + Encodable + HeaderVersion>(
    req: &Request,
    frame: BytesMut,
    f: impl FnOnce(&mut R),
) -> anyhow::Result<BytesMut> {
    let mut b = frame.freeze();
    b.advance(4);
    let _ = ResponseHeader::decode(&mut b, req.key.response_header_version(req.version))?;
    let mut r = R::decode(&mut b, req.version)?;
    f(&mut r);
    super::api::frame(req.key, req.version, req.correlation_id, &r)
}

/// The answer when nothing is allowed, or the patch that adds the refused parts.
pub(super) fn answer_or_patch<R, E>(req: &Request, nothing_left: bool, refused: Vec<E>, add: fn(&mut R, Vec<E>)) -> Gate
where
    R: Decodable + Encodable + HeaderVersion + Default + 'static,
    E: Send + 'static,
{
    if nothing_left {
        let mut r = R::default();
        add(&mut r, refused);
        return Gate::Answer(reply(req, &r));
    }
    Gate::Patch(Box::new(move |req: &Request, frame: BytesMut| patched::<R>(req, frame, |r| add(r, refused))))
}

/// An error message field.
pub(super) fn msg(why: &str) -> Option<StrBytes> {
    Some(StrBytes::from_string(why.to_owned()))
}
