//! `apache.rocketmq.v2.MessagingService` over [`Grpc`]: every RPC first passes the ACL
//! (`auth.rs`, with `aclEnable`: UNAUTHORIZED or FORBIDDEN in the answer's Status), then needs the
//! `x-mq-client-id` header (CLIENT_ID_REQUIRED in the answer's Status without it), then goes to
//! its module. RPCs without a handler here answer UNIMPLEMENTED (tonic's default stubs): the
//! Pull/Offset RPCs and SyncLiteSubscription (as Java 5.3.3), and RecallMessage.
//!
//! May import: `grpc`.

use std::net::SocketAddr;
use std::sync::Arc;

use tonic::{Request, Response, Status};

use super::auth::{self, Guarded};
use super::pb::messaging_service_server::MessagingService;
use super::pb::settings::PubSub;
use super::pb::*;
use super::recover::CommandSink;
use super::status::{self, Refused};
use super::{ack, assign, consume, route, send, telemetry, txn, validate, Grpc};
use crate::core::door::{DoorRole, DoorSession};

/// The header every 5.x SDK sends with its client id.
pub const CLIENT_ID_HEADER: &str = "x-mq-client-id";
/// The header naming the SDK's language (JAVA, GOLANG, PYTHON, ...).
const LANGUAGE_HEADER: &str = "x-mq-language";

pub struct Service(pub Arc<Grpc>);

fn client_id<T>(req: &Request<T>) -> Result<String, Refused> {
    match req.metadata().get(CLIENT_ID_HEADER).and_then(|v| v.to_str().ok()) {
        Some(id) if !id.trim().is_empty() && id.len() <= 256 => Ok(id.to_owned()),
        _ => Err(Refused::new(Code::ClientIdRequired, "x-mq-client-id is required")),
    }
}

/// The checks every unary RPC passes first, in Java's order: the ACL (the signed headers, then
/// what the request needs of the account: `auth.rs`), then the client id.
fn admit<T: Guarded>(g: &Grpc, req: &Request<T>) -> Result<String, Refused> {
    let who = auth::caller(g, req.metadata(), req.remote_addr())?;
    req.get_ref().check(&who)?;
    client_id(req)
}

fn peer<T>(req: &Request<T>) -> SocketAddr {
    req.remote_addr().unwrap_or_else(|| SocketAddr::from(([0, 0, 0, 0], 0)))
}

#[tonic::async_trait]
impl MessagingService for Service {
    async fn query_route(&self, req: Request<QueryRouteRequest>) -> Result<Response<QueryRouteResponse>, Status> {
        let answer = match admit(&self.0, &req) {
            Ok(_) => route::query_route(&self.0, req.get_ref()),
            Err(r) => QueryRouteResponse { status: Some(r.status()), message_queues: Vec::new() },
        };
        Ok(Response::new(answer))
    }

    async fn heartbeat(&self, req: Request<HeartbeatRequest>) -> Result<Response<HeartbeatResponse>, Status> {
        let answer = match admit(&self.0, &req) {
            Ok(id) => match heartbeat(&self.0, &id, &req).await {
                Ok(()) => status::ok(),
                Err(r) => r.status(),
            },
            Err(r) => r.status(),
        };
        Ok(Response::new(HeartbeatResponse { status: Some(answer) }))
    }

    async fn send_message(&self, req: Request<SendMessageRequest>) -> Result<Response<SendMessageResponse>, Status> {
        let answer = match admit(&self.0, &req) {
            Ok(_) => {
                let peer = peer(&req);
                send::send(&self.0, req.into_inner(), peer).await
            }
            Err(r) => SendMessageResponse { status: Some(r.status()), entries: Vec::new() },
        };
        Ok(Response::new(answer))
    }

    async fn telemetry(
        &self,
        req: Request<tonic::Streaming<TelemetryCommand>>,
    ) -> Result<Response<telemetry::Outbound<TelemetryCommand>>, Status> {
        // Authenticated once, by the headers that open the stream; each Settings is checked.
        let admitted = auth::caller(&self.0, req.metadata(), req.remote_addr())
            .and_then(|who| client_id(&req).map(|id| (who, id)));
        match admitted {
            Ok((who, id)) => Ok(Response::new(telemetry::open(self.0.clone(), id, who, req.into_inner()))),
            Err(r) => {
                let only = TelemetryCommand { status: Some(r.status()), command: None };
                Ok(Response::new(Box::pin(futures_util::stream::iter([Ok(only)]))))
            }
        }
    }

    async fn query_assignment(
        &self,
        req: Request<QueryAssignmentRequest>,
    ) -> Result<Response<QueryAssignmentResponse>, Status> {
        let answer = match admit(&self.0, &req) {
            Ok(_) => assign::query_assignment(&self.0, req.get_ref()),
            Err(r) => QueryAssignmentResponse { status: Some(r.status()), assignments: Vec::new() },
        };
        Ok(Response::new(answer))
    }

    async fn receive_message(
        &self,
        req: Request<ReceiveMessageRequest>,
    ) -> Result<Response<telemetry::Outbound<ReceiveMessageResponse>>, Status> {
        use super::pb::receive_message_response::Content;
        let answers = match admit(&self.0, &req) {
            Ok(id) => {
                let remaining =
                    req.metadata().get("grpc-timeout").and_then(|v| v.to_str().ok()).and_then(consume::grpc_timeout);
                consume::receive(&self.0, &id, req.get_ref(), remaining).await
            }
            Err(r) => vec![ReceiveMessageResponse { content: Some(Content::Status(r.status())) }],
        };
        Ok(Response::new(Box::pin(futures_util::stream::iter(answers.into_iter().map(Ok)))))
    }

    async fn ack_message(&self, req: Request<AckMessageRequest>) -> Result<Response<AckMessageResponse>, Status> {
        let answer = match admit(&self.0, &req) {
            Ok(_) => ack::ack(&self.0, req.get_ref()).await,
            Err(r) => AckMessageResponse { status: Some(r.status()), entries: Vec::new() },
        };
        Ok(Response::new(answer))
    }

    async fn change_invisible_duration(
        &self,
        req: Request<ChangeInvisibleDurationRequest>,
    ) -> Result<Response<ChangeInvisibleDurationResponse>, Status> {
        let answer = match admit(&self.0, &req) {
            Ok(_) => ack::change_invisible(&self.0, req.get_ref()).await,
            Err(r) => ChangeInvisibleDurationResponse { status: Some(r.status()), receipt_handle: String::new() },
        };
        Ok(Response::new(answer))
    }

    async fn forward_message_to_dead_letter_queue(
        &self,
        req: Request<ForwardMessageToDeadLetterQueueRequest>,
    ) -> Result<Response<ForwardMessageToDeadLetterQueueResponse>, Status> {
        let answer = match admit(&self.0, &req) {
            Ok(_) => ack::forward_to_dlq(&self.0, req.get_ref()).await,
            Err(r) => r.status(),
        };
        Ok(Response::new(ForwardMessageToDeadLetterQueueResponse { status: Some(answer) }))
    }

    async fn end_transaction(
        &self,
        req: Request<EndTransactionRequest>,
    ) -> Result<Response<EndTransactionResponse>, Status> {
        let answer = match admit(&self.0, &req) {
            Ok(_) => txn::end_transaction(&self.0, req.get_ref()).await,
            Err(r) => EndTransactionResponse { status: Some(r.status()) },
        };
        Ok(Response::new(answer))
    }

    async fn notify_client_termination(
        &self,
        req: Request<NotifyClientTerminationRequest>,
    ) -> Result<Response<NotifyClientTerminationResponse>, Status> {
        let answer = match admit(&self.0, &req) {
            Ok(id) => {
                if let Some((_, session, _)) = self.0.clients.session(&id) {
                    self.0.broker.client_gone(session).await;
                }
                self.0.clients.remove(&id, None);
                self.0.renewals.drop_client(&id).await;
                status::ok()
            }
            Err(r) => r.status(),
        };
        Ok(Response::new(NotifyClientTerminationResponse { status: Some(answer) }))
    }
}

/// Java's `ClientActivity.heartbeat`: the client must have sent its Settings; a consumer's
/// group must be a valid one, and so must the topics it subscribes to. The client's session
/// (its Telemetry stream) then joins the broker's producer or consumer groups.
async fn heartbeat(g: &Grpc, id: &str, req: &Request<HeartbeatRequest>) -> Result<(), Refused> {
    let Some((settings, session, commands)) = g.clients.session(id) else {
        return Err(Refused::new(Code::UnrecognizedClientType, "cannot find client settings for this client"));
    };
    let role = match settings.pub_sub {
        Some(PubSub::Publishing(p)) => DoorRole::Producer { topics: p.topics.into_iter().map(|t| t.name).collect() },
        Some(PubSub::Subscription(s)) => {
            let group = validate::group(req.get_ref().group.as_ref())?.to_owned();
            let mut subscriptions = Vec::with_capacity(s.subscriptions.len());
            for entry in &s.subscriptions {
                let topic = entry.topic.as_ref().map_or("", |t| t.name.as_str());
                crate::model::name::check_topic(topic)
                    .map_err(|e| Refused::new(Code::IllegalTopic, format!("subscription: {e}")))?;
                let filter = entry.expression.as_ref();
                let kind = match filter.map(|f| FilterType::try_from(f.r#type)) {
                    Some(Ok(FilterType::Sql)) => "SQL92",
                    _ => "TAG",
                };
                let expression = filter.map_or("*", |f| f.expression.as_str());
                subscriptions.push((topic.to_owned(), expression.to_owned(), kind.to_owned()));
            }
            let push = settings.client_type == Some(ClientType::PushConsumer as i32);
            DoorRole::Consumer { group, push, subscriptions }
        }
        None => return Err(Refused::new(Code::UnrecognizedClientType, "no publishing or subscription settings")),
    };
    let language = req.metadata().get(LANGUAGE_HEADER).and_then(|v| v.to_str().ok()).unwrap_or("OTHER");
    let client = Arc::new(CommandSink { commands, stream: session, pending: g.pending.clone() });
    let who = DoorSession { session, client_id: id.to_owned(), peer: peer(req), language: language.to_owned(), client };
    g.broker.client_seen(who, role).await;
    Ok(())
}
