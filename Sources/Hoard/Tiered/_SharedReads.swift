import Foundation
import Synchronization

/// The reads below memory in progress, one per key and filters: concurrent reads of
/// a key with the same `maxAge`, `newerThan` and fetch-or-not share one walk of the
/// local stores, the remote stores and the fetch.
///
/// The first reader leads: it runs the walk itself and hands the result to every
/// reader that joined meanwhile. A reader joins only a walk whose ticket
/// no change of the key has passed (``_CacheWriter/hasChanged(_:since:)``), so a
/// read that starts after a write never receives what a walk begun before it
/// found.
final class _SharedReads<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    /// What makes two reads the same read.
    struct Name: Hashable, Sendable {
        var key: Key
        var maxAge: TimeInterval?
        var newerThan: Date?
        var fetches: Bool
    }

    /// A walk in progress: the leader's ticket, and the flight its joiners wait on.
    struct Walk: Sendable {
        var ticket: UInt64
        var flight: _Flight<Value>
    }

    private let walks = Mutex<[Name: Walk]>([:])

    /// The walk to join for `name`, if one is running and `mayJoin` accepts its
    /// ticket; otherwise registers `lead` (a new walk under the caller's ticket)
    /// and returns `nil`.
    func join(_ name: Name, leading lead: Walk, mayJoin: (UInt64) -> Bool) -> _Flight<Value>? {
        walks.withLock { walks -> _Flight<Value>? in
            if let walk = walks[name], mayJoin(walk.ticket) { return walk.flight }
            if walks[name] == nil { walks[name] = lead }
            return nil
        }
    }

    /// Ends the walk `lead` with `result`: forgets it, then resumes its joiners.
    func finish(_ name: Name, _ lead: Walk, with result: Result<Value, any Error>) {
        walks.withLock { walks in
            if let walk = walks[name], walk.flight === lead.flight { walks[name] = nil }
        }
        lead.flight.finish(result)
    }
}
