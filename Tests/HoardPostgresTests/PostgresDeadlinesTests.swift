#if Postgres
import NIOCore
import NIOEmbedded
import Synchronization
import Testing

@testable import HoardPostgres

/// The pool's limits, on an event loop whose time the test moves.
@Suite("PostgresStore operation deadlines")
struct PostgresDeadlinesTests {
    @Test("An action runs once, after its deadline and within the resolution; a cancelled one never runs")
    func deadlinesFire() {
        // Given deadlines ticking every 10 ms (a twentieth of 200 ms)
        let loop = EmbeddedEventLoop()
        let deadlines = _PostgresDeadlines(eventLoop: loop, shortestLimit: .milliseconds(200))
        #expect(deadlines.resolution == .milliseconds(10))
        let fired = Mutex<[String]>([])
        _ = deadlines.add(after: .milliseconds(50)) { fired.withLock { $0.append("50 ms") } }
        let cancelled = deadlines.add(after: .milliseconds(30)) { fired.withLock { $0.append("cancelled") } }
        _ = deadlines.add(after: .milliseconds(200)) { fired.withLock { $0.append("200 ms") } }

        // When time passes
        deadlines.cancel(cancelled)
        loop.advanceTime(by: .milliseconds(45))
        let before = fired.withLock { $0 }
        loop.advanceTime(by: .milliseconds(15))
        let after = fired.withLock { $0 }
        loop.advanceTime(by: .seconds(1))

        // Then each live action ran once, no earlier than its deadline
        #expect(before == [])
        #expect(after == ["50 ms"])
        #expect(fired.withLock { $0 } == ["50 ms", "200 ms"])
    }

    @Test("The timer stops when no deadline is left and starts again with the next one")
    func timerStopsAndRestarts() {
        let loop = EmbeddedEventLoop()
        let deadlines = _PostgresDeadlines(eventLoop: loop, shortestLimit: .seconds(10))
        #expect(deadlines.resolution == .milliseconds(100), "at most 100 ms")
        let count = Mutex(0)
        let id = deadlines.add(after: .seconds(1)) { count.withLock { $0 += 1 } }
        #expect(deadlines.isTicking)
        deadlines.cancel(id)
        // The pending tick finds nothing and does not schedule another.
        loop.advanceTime(by: .milliseconds(100))
        #expect(!deadlines.isTicking, "an idle pool keeps no timer")

        _ = deadlines.add(after: .milliseconds(250)) { count.withLock { $0 += 1 } }
        #expect(deadlines.isTicking)
        loop.advanceTime(by: .milliseconds(300))
        #expect(count.withLock { $0 } == 1)
        #expect(!deadlines.isTicking)
    }

    @Test("Resolution is a twentieth of the shortest limit, at least a millisecond")
    func resolutionBounds() {
        let loop = EmbeddedEventLoop()
        #expect(_PostgresDeadlines(eventLoop: loop, shortestLimit: .milliseconds(5)).resolution == .milliseconds(1))
        #expect(_PostgresDeadlines(eventLoop: loop, shortestLimit: .seconds(1)).resolution == .milliseconds(50))
    }
}
#endif
