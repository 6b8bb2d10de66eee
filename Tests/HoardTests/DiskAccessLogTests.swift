import Testing

@testable import Hoard

/// `_DiskAccessLog`: reads append their access times under the log's lock, at
/// most one per row within the resolution; a take holds that lock only to move
/// them out, and hands back one per row, its newest, in row id order.
@Suite("Disk access log")
struct DiskAccessLogTests {
    func log(resolution: Double = 60) -> _DiskAccessLog {
        _DiskAccessLog(resolution: resolution, flushCount: 10_000, flushInterval: 1)
    }

    @Test("A take hands back the pending accesses in row id order, once")
    func takeSortsAndEmpties() {
        let log = log()
        for id in [5, 1, 3] as [Int64] { _ = log.record(id: id, now: Double(id), storedAt: 0, epoch: 0) }
        #expect(log.take().map(\.id) == [1, 3, 5])
        #expect(log.isEmpty)
        #expect(log.take().isEmpty)
    }

    @Test("A read of a row recorded within the resolution, taken or not, is not recorded again")
    func recordedRowsWithinTheResolution() {
        let log = log(resolution: 60)
        _ = log.record(id: 1, now: 0, storedAt: 0, epoch: 0)
        _ = log.record(id: 1, now: 30, storedAt: 0, epoch: 1)
        let first = log.take()
        #expect(first == [.init(id: 1, time: 0, storedAt: 0, epoch: 0)], "the first read's time and epoch")
        // Taken (being written, or written): still not recorded again within the resolution.
        _ = log.record(id: 1, now: 59, storedAt: 0, epoch: 0)
        #expect(log.isEmpty)
        // Another row is recorded as usual.
        _ = log.record(id: 2, now: 10, storedAt: 0, epoch: 0)
        #expect(!log.isEmpty)
        // A resolution after its last recorded time, row 1 is recorded again.
        _ = log.record(id: 1, now: 61, storedAt: 0, epoch: 0)
        #expect(log.take().map { [$0.id, Int64($0.time)] } == [[1, 61], [2, 10]])
    }

    @Test("A row read again a resolution later, before a take, is taken once, with its newest read")
    func newestReadWins() {
        let log = log(resolution: 60)
        _ = log.record(id: 7, now: 0, storedAt: 0, epoch: 0)
        _ = log.record(id: 3, now: 5, storedAt: 0, epoch: 0)
        _ = log.record(id: 7, now: 100, storedAt: 90, epoch: 4)
        #expect(
            log.take() == [
                .init(id: 3, time: 5, storedAt: 0, epoch: 0), .init(id: 7, time: 100, storedAt: 90, epoch: 4),
            ])
    }

    @Test("A take prunes the rows recorded longer ago than the resolution once there are many, and only those")
    func pruning() {
        let log = log(resolution: 60)
        for id in 0..<5_000 as Range<Int64> { _ = log.record(id: id, now: 0, storedAt: 0, epoch: 0) }
        _ = log.take()
        #expect(log.recordedCount == 5_000, "all within the resolution of the newest: kept")
        _ = log.record(id: 0, now: 59, storedAt: 0, epoch: 0)
        #expect(log.isEmpty, "row 0 is still remembered")
        // Pruned again once it has doubled (past 10,000 rows)
        for id in 10_000..<16_000 as Range<Int64> { _ = log.record(id: id, now: 100, storedAt: 0, epoch: 0) }
        _ = log.take()
        #expect(log.recordedCount == 6_000, "the rows recorded at 0 are dropped")
        _ = log.record(id: 0, now: 100, storedAt: 0, epoch: 0)
        _ = log.record(id: 10_000, now: 100, storedAt: 0, epoch: 0)
        #expect(log.take().map(\.id) == [0])
    }

    @Test("Accesses given back are taken again with later reads of their rows, and count once per row")
    func giveBack() {
        let log = _DiskAccessLog(resolution: 10, flushCount: 4, flushInterval: 3_600)
        _ = log.record(id: 1, now: 0, storedAt: 0, epoch: 0)
        _ = log.record(id: 2, now: 0, storedAt: 0, epoch: 0)
        let taken = log.take()
        // Row 2 read again a resolution later, before the write of the take fails
        _ = log.record(id: 2, now: 20, storedAt: 0, epoch: 1)
        log.giveBack(taken)
        // Row 1 is remembered as recorded, within the resolution
        #expect(log.record(id: 1, now: 5, storedAt: 0, epoch: 0) == .none)
        // Two rows pending: the fourth row, not the third, reaches the flush count
        #expect(log.record(id: 3, now: 20, storedAt: 0, epoch: 1) == .none)
        #expect(log.record(id: 4, now: 20, storedAt: 0, epoch: 1) == .now)
        #expect(log.take().map { [$0.id, Int64($0.time)] } == [[1, 0], [2, 20], [3, 20], [4, 20]])
        #expect(log.isEmpty)
    }

    @Test("Accesses given back after a take pruned their rows are pending again")
    func giveBackAfterPruning() {
        let log = log(resolution: 60)
        for id in 0..<5_000 as Range<Int64> { _ = log.record(id: id, now: 0, storedAt: 0, epoch: 0) }
        let first = log.take()
        for id in 10_000..<16_000 as Range<Int64> { _ = log.record(id: id, now: 100, storedAt: 0, epoch: 0) }
        _ = log.take()
        #expect(log.recordedCount == 6_000, "the rows recorded at 0 are dropped")
        log.giveBack(first)
        #expect(log.recordedCount == 11_000)
        #expect(log.take() == first)
    }

    @Test("With a resolution of zero every read is recorded")
    func zeroResolutionRecordsEveryRead() {
        let log = log(resolution: 0)
        _ = log.record(id: 1, now: 0, storedAt: 0, epoch: 0)
        #expect(log.take().map(\.id) == [1])
        _ = log.record(id: 1, now: 0, storedAt: 0, epoch: 0)
        #expect(log.take().map(\.id) == [1])
    }

    @Test("The flush count counts rows: a row read again before the flush does not bring it nearer")
    func flushCountCountsRows() {
        let log = _DiskAccessLog(resolution: 0, flushCount: 3, flushInterval: 3_600)
        #expect(log.record(id: 1, now: 0, storedAt: 0, epoch: 0) == .after(3_600))
        #expect(log.record(id: 2, now: 0, storedAt: 0, epoch: 0) == .none)
        #expect(log.record(id: 2, now: 1, storedAt: 0, epoch: 0) == .none)
        #expect(log.record(id: 1, now: 2, storedAt: 0, epoch: 0) == .none)
        #expect(log.record(id: 3, now: 2, storedAt: 0, epoch: 0) == .now, "the third row")
        #expect(log.take().map { [$0.id, Int64($0.time)] } == [[1, 2], [2, 1], [3, 2]])
        // After the take, each row counts again
        log.flushStarted(immediate: true)
        _ = log.record(id: 1, now: 3, storedAt: 0, epoch: 0)
        _ = log.record(id: 2, now: 3, storedAt: 0, epoch: 0)
        #expect(log.record(id: 2, now: 4, storedAt: 0, epoch: 0) == .none)
        #expect(log.record(id: 4, now: 4, storedAt: 0, epoch: 0) == .now)
    }
}
