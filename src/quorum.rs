//! Redlock over several nodes: the nodes of one lock, how many were given, and the
//! majority that decides. One server is the case N = 1.
//!
//! The quorum is a majority of the nodes *given* (`--redis` × N), not of those that
//! answered the connect: a node left out because it was down at the start counts as a
//! node that said no. Otherwise two clients that each reached a different 3 of 5 nodes
//! would each need only 2 votes, and both could hold the lock.

use std::time::Duration;

use futures_util::future::join_all;

use crate::error::{Error, Result, most_telling};
use crate::redis::{Node, RedisUrl};

/// The nodes a lock lives on: those reached, out of those given. A clone shares the
/// connections.
#[derive(Clone)]
pub struct Nodes {
    reached: Vec<Node>,
    given: usize,
    timeout: Duration,
    /// Where the primary node is in `reached`, when it was reached (see
    /// [`Nodes::primary`]).
    primary: Option<usize>,
}

/// Which of `urls` is the primary node (see [`Nodes::primary`]): the first by its URL
/// as shown (password hidden, so that hosts with different credentials still agree).
fn primary_of(urls: &[RedisUrl]) -> Option<usize> {
    (0..urls.len()).min_by_key(|&i| urls[i].to_string())
}

/// Votes needed among `given` nodes: N/2 + 1.
pub const fn majority(given: usize) -> usize {
    given / 2 + 1
}

impl Nodes {
    /// Connects to every node in parallel; an error unless a majority of `urls` answered.
    /// With one node its error is the error; with several, the message says how many
    /// were reached.
    pub async fn connect(urls: &[RedisUrl], timeout: Duration) -> Result<Nodes> {
        let results = join_all(urls.iter().map(|u| Node::connect(u, timeout))).await;
        let mut reached = Vec::new();
        let mut errors = Vec::new();
        let first = primary_of(urls);
        let mut primary = None;
        for (i, result) in results.into_iter().enumerate() {
            match result {
                Ok(node) => {
                    if Some(i) == first {
                        primary = Some(reached.len());
                    }
                    reached.push(node)
                }
                Err(e) => errors.push(e),
            }
        }
        let nodes = Nodes {
            reached,
            given: urls.len(),
            timeout,
            primary,
        };
        if nodes.reached.len() >= nodes.quorum() {
            return Ok(nodes);
        }
        let err =
            most_telling(errors).unwrap_or_else(|| Error::internal("no Redis URL to connect to"));
        if nodes.given == 1 {
            return Err(err);
        }
        Err(err.context(format!(
            "only {} of {} Redis nodes reachable, {} needed",
            nodes.reached.len(),
            nodes.given,
            nodes.quorum()
        )))
    }

    /// Votes needed: a majority of the nodes given.
    pub fn quorum(&self) -> usize {
        majority(self.given)
    }

    /// The timeout of one request to a node.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// How many nodes were given (`--redis` × N), reachable or not.
    pub fn given(&self) -> usize {
        self.given
    }

    /// Nodes given but not connected: they can never vote yes.
    pub fn missing(&self) -> usize {
        self.given - self.reached.len()
    }

    /// The node where waiters wait and releases wake them: of the nodes given, the one
    /// whose URL sorts first (passwords aside), when it was reached. Every client that
    /// names the same nodes agrees on it, in whatever order it lists them; a client
    /// that could not reach it wakes nobody and is woken by nobody (its waiters fall
    /// back on their safety net). One node for all keeps a release's wake-up to one
    /// waiter, and leaves nothing on the other nodes.
    pub fn primary(&self) -> Option<&Node> {
        self.primary.map(|i| &self.reached[i])
    }

    /// Whether `node` (one of [`Nodes::iter`]) is the [`Nodes::primary`].
    pub fn is_primary(&self, node: &Node) -> bool {
        self.primary().is_some_and(|p| std::ptr::eq(p, node))
    }

    /// The nodes reached.
    pub fn iter(&self) -> std::slice::Iter<'_, Node> {
        self.reached.iter()
    }

    /// Runs `call` on every node reached, in parallel; the results in node order.
    pub async fn each<'a, T, F>(&'a self, call: impl Fn(&'a Node) -> F) -> Vec<Result<T>>
    where
        F: Future<Output = Result<T>> + 'a,
    {
        join_all(self.reached.iter().map(call)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn majorities() {
        let table = [(1, 1), (2, 2), (3, 2), (4, 3), (5, 3), (7, 4)];
        for (given, needed) in table {
            assert_eq!(majority(given), needed, "{given}");
        }
    }
}
