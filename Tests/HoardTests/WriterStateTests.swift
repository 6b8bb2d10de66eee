import Foundation
import Synchronization
import Testing

@testable import Hoard

/// The writer's decisions, without threads: every sequence of up to three queued
/// changes, every point at which the stores have applied a prefix of them, every
/// content the stores held before, checked against a model of the stores.
@Suite("Cache writer: the state machine's transitions")
struct WriterStateTests {
    typealias State = _WriterState<String, Int>
    typealias Kind = _WriteOperation<String, Int>.Kind

    /// One change of the alphabet the exhaustive tests draw from.
    enum Change: CaseIterable {
        case setK, setJ, removeK, invalidateK, removeKByString, clearLocal, clearRemote, clearBoth
        /// A clear of memory only (`clear(memory: true, disk: false, remote: false)`).
        case clearNone

        /// The writer's operation for this change, the `step`-th of its sequence
        /// (a set writes the value `step`).
        func kind(step: Int) -> Kind {
            let dates = _WriteDates(
                storedAt: Date(timeIntervalSince1970: 0), memoryExpiry: nil, localExpiry: nil, remoteExpiry: nil)
            switch self {
            case .setK: return .set("k", step, dates)
            case .setJ: return .set("j", step, dates)
            case .removeK: return .remove("k", remote: true)
            case .invalidateK: return .remove("k", remote: false)
            case .removeKByString: return .removeLocally("k")
            case .clearLocal: return .removeAll(local: true, remote: false)
            case .clearRemote: return .removeAll(local: false, remote: true)
            case .clearBoth: return .removeAll(local: true, remote: true)
            case .clearNone: return .removeAll(local: false, remote: false)
            }
        }

        /// Whether it changes what a read of `k` may answer.
        var changesK: Bool { self != .setJ }

        /// The changes that can happen in a cache with or without remote stores
        /// (invalidations come from remote stores only).
        static func alphabet(remote: Bool) -> [Change] {
            remote ? allCases : [.setK, .setJ, .removeK, .clearLocal, .clearRemote, .clearBoth, .clearNone]
        }
    }

    /// The stores' content, as the writer's changes leave it.
    struct Stores: Equatable {
        var local: [String: Int] = [:]
        var remote: [String: Int] = [:]
        let hasRemote: Bool

        mutating func apply(_ kind: Kind) {
            applyLocally(kind)
            applyRemotely(kind)
        }

        /// The local stores' share of `kind` (the writer applies a batch there
        /// first).
        mutating func applyLocally(_ kind: Kind) {
            switch kind {
            case .set(let key, let value, _): local[key] = value
            case .remove(let key, _), .removeLocally(let key): local[key] = nil
            case .removeAll(let clearsLocal, _): if clearsLocal { local = [:] }
            case .promote(let key, _, let data, _, _, let localStoresBefore):
                // The model has one local store: a promotion from the remote stores
                // (`localStoresBefore` 1) writes it, one from it (0) writes nothing.
                if localStoresBefore > 0 { local[key] = Stores.decode(data) }
            }
        }

        /// The bytes a promotion of `value` carries.
        static func encode(_ value: Int) -> Data { Data(String(value).utf8) }

        static func decode(_ data: Data) -> Int? { Int(String(decoding: data, as: UTF8.self)) }

        /// The remote stores' share of `kind` (applied after the local stores', before
        /// the batch completes).
        mutating func applyRemotely(_ kind: Kind) {
            guard hasRemote else { return }
            switch kind {
            case .set(let key, let value, _): remote[key] = value
            case .remove(let key, let fromRemote): if fromRemote { remote[key] = nil }
            case .removeLocally: break
            case .removeAll(_, let clearsRemote): if clearsRemote { remote = [:] }
            case .promote: break  // promotions copy into local stores only
            }
        }

        /// What a read of `key` that asks the stores answers: the local stores
        /// first, then the remote ones.
        func answer(_ key: String) -> Int? { local[key] ?? remote[key] }

        /// What a read answers when the writer says `pending` for its key.
        func answer(_ key: String, pending: _PendingRead<Int>?) -> Int? {
            switch pending {
            case nil: answer(key)
            case .value(let value, _, _)?: value
            case .removed(let clearsLocal, let clearsRemote)?:
                (clearsLocal ? nil : local[key]) ?? (clearsRemote ? nil : remote[key])
            }
        }
    }

    /// Every sequence of `length` or fewer changes from `alphabet`.
    static func sequences(of alphabet: [Change], upTo length: Int) -> [[Change]] {
        var all: [[Change]] = [[]]
        var last: [[Change]] = [[]]
        for _ in 0..<length {
            last = last.flatMap { prefix in alphabet.map { prefix + [$0] } }
            all += last
        }
        return all
    }

    @Test(
        "A read answers what the stores will hold once every queued change is applied, whatever was applied so far",
        arguments: [false, true])
    func readsSeeTheNewestChange(remote: Bool) {
        var checked = 0
        for changes in Self.sequences(of: Change.alphabet(remote: remote), upTo: 3) {
            for initial in [(nil, nil), (100, nil), (nil, 200), (100, 200)] as [(Int?, Int?)] {
                checked += Self.checkReads(
                    changes, local: initial.0, remote: remote ? initial.1 : nil, hasRemote: remote)
            }
        }
        #expect(checked > 1_000)
    }

    /// Queues `changes` over stores holding `local` and `remote` for both keys,
    /// applies them one by one, and checks every read on the way.
    ///
    /// - Returns: How many reads it checked.
    static func checkReads(_ changes: [Change], local: Int?, remote: Int?, hasRemote: Bool) -> Int {
        let kinds = changes.enumerated().map { $0.element.kind(step: $0.offset + 1) }
        var before = Stores(hasRemote: hasRemote)
        for key in ["k", "j"] {
            before.local[key] = local
            before.remote[key] = remote
        }
        var final = before
        for kind in kinds { final.apply(kind) }

        var state = State(hasStores: true, hasRemoteStores: hasRemote, queueByteLimit: nil)
        for kind in kinds {
            _ = state.write(kind, bytes: 0, waitsForRoom: false)
        }
        let queued = state.takeQueued()
        #expect(queued.count == kinds.count)
        // The stores apply the queue one operation at a time; a read may come at
        // any point.
        var stores = before
        var checked = 0
        for applied in 0...queued.count {
            if applied > 0 {
                stores.apply(queued[applied - 1].kind)
                _ = state.complete(queued[(applied - 1)..<applied], hasSuspectKeys: false)
            }
            for key in ["k", "j"] {
                let answer = stores.answer(key, pending: state.pending(for: key))
                let expected = final.answer(key)
                if answer != expected {
                    Issue.record(
                        "\(changes) over stores \(local as Any)/\(remote as Any), \(applied) applied: a read of \(key) answers \(answer as Any), the stores will hold \(expected as Any)"
                    )
                }
                checked += 1
            }
        }
        // Once everything is applied, nothing is pending.
        if !state.keys.isEmpty || state.pending(for: "k") != nil {
            Issue.record("\(changes): still pending once applied")
        }
        return checked
    }

    @Test(
        "Changes queued while earlier batches are applied: every read, between any two steps of the stores, answers what they will hold",
        arguments: [false, true])
    func readsSeeTheNewestChangeWhileBatchesApply(remote: Bool) {
        var checked = 0
        for changes in Self.sequences(of: Change.alphabet(remote: remote), upTo: 3) {
            // Bit `i` of `schedule`: the writer takes and applies what is queued
            // after the `i`-th change.
            for schedule in 0..<(1 << changes.count) {
                for initial in [(nil, nil), (100, 200)] as [(Int?, Int?)] {
                    checked += Self.checkInterleaved(
                        changes, schedule: schedule, local: initial.0, remote: remote ? initial.1 : nil,
                        hasRemote: remote)
                }
            }
        }
        #expect(checked > 10_000)
    }

    /// Makes `changes` one by one over stores holding `local` and `remote` for both
    /// keys; after the changes that `schedule` marks (and after the last), takes the
    /// queue and applies it as the writer does: every operation's local share in
    /// order, then every remote share, then completes the batch. Checks every read
    /// after each step against what the stores will hold once every change made so
    /// far is applied.
    ///
    /// - Returns: How many reads it checked.
    static func checkInterleaved(
        _ changes: [Change], schedule: Int, local: Int?, remote: Int?, hasRemote: Bool
    ) -> Int {
        var stores = Stores(hasRemote: hasRemote)
        for key in ["k", "j"] {
            stores.local[key] = local
            stores.remote[key] = remote
        }
        var promised = stores
        var state = State(hasStores: true, hasRemoteStores: hasRemote, queueByteLimit: nil)
        var checked = 0
        func checkReads(_ moment: String) {
            for key in ["k", "j"] {
                let answer = stores.answer(key, pending: state.pending(for: key))
                let expected = promised.answer(key)
                if answer != expected {
                    Issue.record(
                        "\(changes), schedule \(schedule), over \(local as Any)/\(remote as Any), \(moment): a read of \(key) answers \(answer as Any), the stores will hold \(expected as Any)"
                    )
                }
                checked += 1
            }
        }
        func applyQueue(after step: Int) {
            let batch = state.takeQueued()
            for (index, operation) in batch.enumerated() {
                stores.applyLocally(operation.kind)
                checkReads("after step \(step), local share \(index) of \(batch.count)")
            }
            for (index, operation) in batch.enumerated() {
                stores.applyRemotely(operation.kind)
                checkReads("after step \(step), remote share \(index) of \(batch.count)")
            }
            _ = state.complete(batch[...], hasSuspectKeys: false)
            checkReads("after step \(step), batch completed")
        }
        for (step, change) in changes.enumerated() {
            let kind = change.kind(step: step + 1)
            _ = state.write(kind, bytes: 0, waitsForRoom: false)
            promised.apply(kind)
            checkReads("after step \(step)")
            if schedule & (1 << step) != 0 { applyQueue(after: step) }
        }
        applyQueue(after: changes.count)
        #expect(state.takeQueued().isEmpty)
        if !state.keys.isEmpty || state.pending(for: "k") != nil || state.queuedBytes != 0 {
            Issue.record("\(changes), schedule \(schedule): still pending once applied")
        }
        #expect(stores == promised)
        return checked
    }

    /// One step of ``readsPromotionsAndFetchesKeepTheNewestChange(remote:length:)``: a
    /// change of the alphabet, or a step of one read of `k`.
    enum ReadStep: Equatable {
        case change(Change)
        /// A read of `k` begins below memory: it takes its ticket and finds what
        /// the queued changes and the stores answer now.
        case beginRead
        /// The read ends as the cache's does with what it found: a value it found
        /// (queued, or in the local store) is promoted into memory, one found in
        /// the remote store into memory and the local store, and on a miss the
        /// fetched value is written under the read's ticket.
        case finishRead

        /// Every change of ``Change/alphabet(remote:)`` (`full`), or those of `k`
        /// and one clear of each tier, then the read's two steps.
        static func alphabet(remote: Bool, full: Bool) -> [ReadStep] {
            let changes: [Change] =
                full
                ? Change.alphabet(remote: remote)
                : remote
                    ? [.setK, .removeK, .invalidateK, .removeKByString, .clearLocal, .clearRemote]
                    : [.setK, .removeK, .clearLocal]
            return changes.map { .change($0) } + [.beginRead, .finishRead]
        }
    }

    /// What a read of `k` found, as the cache's read walks the tiers.
    enum Found: Equatable {
        /// A queued change's value, or the local store's: memory takes it.
        case inMemoryOrLocal(Int)
        /// The remote store's: memory and the local store take it.
        case remote(Int)
        /// Nothing: the read fetches.
        case miss
    }

    /// Walks the tiers as `Cache`'s read does for `pending`: a queued value
    /// answers; a queued removal hides the tiers it removed from; then the local
    /// store, then the remote one.
    static func walk(_ stores: Stores, pending: _PendingRead<Int>?) -> Found {
        var searchesLocal = true
        var searchesRemote = stores.hasRemote
        switch pending {
        case .value(let value, _, _)?: return .inMemoryOrLocal(value)
        case .removed(let local, let remote)?:
            searchesLocal = !local
            searchesRemote = searchesRemote && !remote
        case nil: break
        }
        if searchesLocal, let value = stores.local["k"] { return .inMemoryOrLocal(value) }
        if searchesRemote, let value = stores.remote["k"] { return .remote(value) }
        return .miss
    }

    @Test(
        "Promotions and fetched values, between any changes and batches: what is copied is what a read would answer, and reads stay right after it",
        arguments: [false, true], [3, 4])
    func readsPromotionsAndFetchesKeepTheNewestChange(remote: Bool, length: Int) {
        var checked = 0
        // Every change in sequences of three steps; those of `k` and the clears in
        // sequences of four.
        let alphabet = ReadStep.alphabet(remote: remote, full: length == 3)
        var sequences: [[ReadStep]] = [[]]
        for _ in 0..<length { sequences = sequences.flatMap { prefix in alphabet.map { prefix + [$0] } } }
        for steps in sequences where steps.contains(.beginRead) {
            for schedule in 0..<(1 << steps.count) {
                for initial in [(nil, nil), (nil, 200), (100, 200)] as [(Int?, Int?)] {
                    checked += Self.checkPromotions(
                        steps, schedule: schedule, local: initial.0, remote: remote ? initial.1 : nil,
                        hasRemote: remote)
                }
            }
        }
        #expect(checked > 10_000)
    }

    /// Runs `steps` as ``checkInterleaved(_:schedule:local:remote:hasRemote:)``
    /// runs changes, with one read of `k` that begins and finishes where `steps`
    /// say (a read still open after the last step finishes then). Checks that a
    /// promotion or fetched value the writer accepts copies what the stores will
    /// hold, and every read after each step as before.
    ///
    /// - Returns: How many reads it checked.
    static func checkPromotions(
        _ steps: [ReadStep], schedule: Int, local: Int?, remote: Int?, hasRemote: Bool
    ) -> Int {
        var stores = Stores(hasRemote: hasRemote)
        for key in ["k", "j"] {
            stores.local[key] = local
            stores.remote[key] = remote
        }
        // What the stores will hold once every change and accepted copy so far is
        // applied.
        var promised = stores
        var state = State(hasStores: true, hasRemoteStores: hasRemote, queueByteLimit: nil)
        var read: (ticket: UInt64, found: Found)?
        var finished = false
        var checked = 0
        func fail(_ what: String) {
            Issue.record("\(steps), schedule \(schedule), over \(local as Any)/\(remote as Any): \(what)")
        }
        func checkReads(_ moment: String) {
            for key in ["k", "j"] {
                let answer = stores.answer(key, pending: state.pending(for: key))
                if answer != promised.answer(key) {
                    fail(
                        "\(moment): a read of \(key) answers \(answer as Any), the stores will hold \(promised.answer(key) as Any)"
                    )
                }
                checked += 1
            }
        }
        func applyQueue(after step: Int) {
            let batch = state.takeQueued()
            for (index, operation) in batch.enumerated() {
                stores.applyLocally(operation.kind)
                checkReads("after step \(step), local share \(index) of \(batch.count)")
            }
            for (index, operation) in batch.enumerated() {
                stores.applyRemotely(operation.kind)
                checkReads("after step \(step), remote share \(index) of \(batch.count)")
            }
            _ = state.complete(batch[...], hasSuspectKeys: false)
            checkReads("after step \(step), batch completed")
        }
        func finishRead(at step: Int) {
            guard let (ticket, found) = read, !finished else { return }
            finished = true
            defer { state.endRead(ticket) }
            switch found {
            case .inMemoryOrLocal(let value):
                if state.promote("k", ifUnchangedSince: ticket, stores: nil, bytes: 0) != .dropped,
                    value != promised.answer("k")
                {
                    fail("step \(step): memory took \(value), the stores will hold \(promised.answer("k") as Any)")
                }
            case .remote(let value):
                let copy = Kind.promote(
                    "k", value, Stores.encode(value), storedAt: Date(timeIntervalSince1970: 0), expiresAt: nil,
                    localStoresBefore: 1)
                let outcome = state.promote("k", ifUnchangedSince: ticket, stores: copy, bytes: 1)
                guard outcome != .dropped else { return }
                if value != promised.answer("k") {
                    fail(
                        "step \(step): the remote store's \(value) was promoted, the stores will hold \(promised.answer("k") as Any)"
                    )
                }
                if case .queued = outcome { promised.apply(copy) }
            case .miss:
                let fetched = Change.setK.kind(step: 50 + step)
                guard state.write(fetched, ifUnchangedSince: ticket, bytes: 0, waitsForRoom: false) != .dropped
                else { return }
                if promised.answer("k") != nil {
                    fail("step \(step): a fetched value was written over \(promised.answer("k") as Any)")
                }
                promised.apply(fetched)
            }
        }
        for (step, readStep) in steps.enumerated() {
            switch readStep {
            case .change(let change):
                let kind = change.kind(step: step + 1)
                _ = state.write(kind, bytes: 0, waitsForRoom: false)
                promised.apply(kind)
            case .beginRead:
                guard read == nil else { break }
                let (ticket, pending) = state.beginRead("k")
                read = (ticket, walk(stores, pending: pending))
            case .finishRead:
                finishRead(at: step)
            }
            checkReads("after step \(step)")
            if schedule & (1 << step) != 0 { applyQueue(after: step) }
        }
        finishRead(at: steps.count)
        applyQueue(after: steps.count)
        if !state.keys.isEmpty || state.pending(for: "k") != nil || !state.tickets.isEmpty {
            fail("still pending once applied")
        }
        if stores != promised { fail("the stores hold \(stores), not \(promised)") }
        return checked
    }

    @Test(
        "A read's promotion and its fetched value are dropped exactly when its key changed after the read began",
        arguments: [false, true])
    func ticketsDropWhatIsOlder(remote: Bool) {
        for changes in Self.sequences(of: Change.alphabet(remote: remote), upTo: 3) {
            for readStart in 0...changes.count {
                for stores in [false, true] {
                    var state = State(hasStores: stores, hasRemoteStores: remote && stores, queueByteLimit: nil)
                    var ticket: UInt64 = 0
                    for (step, change) in changes.enumerated() {
                        if step == readStart { ticket = state.beginRead("k").ticket }
                        _ = state.write(change.kind(step: step + 1), bytes: 0, waitsForRoom: false)
                    }
                    if readStart == changes.count { ticket = state.beginRead("k").ticket }
                    let expected = changes[readStart...].contains { $0.changesK }
                    #expect(state.hasChanged("k", since: ticket) == expected, "\(changes), read from \(readStart)")

                    // A promotion is dropped when and only when the key changed.
                    var promoting = state
                    let promotion = promoting.promote(
                        "k", ifUnchangedSince: ticket,
                        stores: .promote("k", 1, Data([1]), storedAt: Date(), expiresAt: nil, localStoresBefore: 1),
                        bytes: 1)
                    #expect((promotion == .dropped) == expected, "\(changes), read from \(readStart)")

                    // So is a fetched value written under the ticket, and it changes
                    // nothing then.
                    var fetching = state
                    let fetched = fetching.write(
                        Change.setK.kind(step: 99), ifUnchangedSince: ticket, bytes: 0, waitsForRoom: false)
                    #expect((fetched == .dropped) == expected, "\(changes), read from \(readStart)")
                    if expected {
                        #expect(fetching.nextSequence == state.nextSequence)
                        #expect(fetching.queue.count == state.queue.count)
                    }

                    // The other key changed only through a clear or its own set.
                    let jChanged = changes[readStart...].contains {
                        [.setJ, .clearLocal, .clearRemote, .clearBoth, .clearNone].contains($0)
                    }
                    #expect(state.hasChanged("j", since: ticket) == jChanged, "\(changes), read from \(readStart)")

                    state.endRead(ticket)
                    #expect(state.tickets.isEmpty)
                    #expect(state.tickets.changed.isEmpty && state.tickets.changedStrings.isEmpty)
                }
            }
        }
    }

    @Test("Changes of keys no read can see are not remembered; a read's changes outlive pruning")
    func changesAreRememberedOnlyForReads() {
        var state = State(hasStores: true, hasRemoteStores: false, queueByteLimit: nil)
        _ = state.write(.set("a", 1, Self.dates), bytes: 0, waitsForRoom: false)
        #expect(state.tickets.changed.isEmpty)
        let ticket = state.beginRead("a").ticket
        for index in 0..<3_000 {
            _ = state.write(.set("key\(index)", index, Self.dates), bytes: 0, waitsForRoom: false)
        }
        // Pruning keeps every change at or after the oldest read's ticket.
        #expect(state.hasChanged("key0", since: ticket))
        #expect(state.hasChanged("key2999", since: ticket))
        #expect(!state.hasChanged("a", since: ticket))
        state.endRead(ticket)
        #expect(state.tickets.changed.isEmpty)
    }

    @Test("A ticket held twice stays until both holds are given back")
    func retainedTickets() {
        var state = State(hasStores: true, hasRemoteStores: false, queueByteLimit: nil)
        let ticket = state.beginRead("k").ticket
        state.retainRead(ticket)
        state.endRead(ticket)
        _ = state.write(.set("k", 1, Self.dates), bytes: 0, waitsForRoom: false)
        #expect(state.hasChanged("k", since: ticket))
        state.endRead(ticket)
        #expect(state.tickets.isEmpty)
    }

    // MARK: The queue

    static let dates = _WriteDates(storedAt: Date(), memoryExpiry: nil, localExpiry: nil, remoteExpiry: nil)

    @Test("The first change starts the writer; later ones join it until it finds the queue empty")
    func startingTheWriter() {
        var state = State(hasStores: true, hasRemoteStores: false, queueByteLimit: nil)
        #expect(state.write(.set("a", 1, Self.dates), bytes: 0, waitsForRoom: false) == .queued(startsApplying: true))
        #expect(state.write(.set("b", 2, Self.dates), bytes: 0, waitsForRoom: false) == .queued(startsApplying: false))
        let taken = state.takeQueued()
        #expect(taken.map(\.sequence) == [1, 2])
        #expect(state.isApplying)
        #expect(
            state.write(.remove("a", remote: true), bytes: 0, waitsForRoom: false) == .queued(startsApplying: false))
        _ = state.complete(taken[...], hasSuspectKeys: false)
        #expect(state.takeQueued().map(\.sequence) == [3])
        #expect(state.takeQueued().isEmpty)
        #expect(!state.isApplying)
        #expect(state.write(.set("c", 3, Self.dates), bytes: 0, waitsForRoom: false) == .queued(startsApplying: true))
    }

    @Test("A cache without stores makes every change in memory, and a flush has nothing to wait for")
    func withoutStores() {
        var state = State(hasStores: false, hasRemoteStores: false, queueByteLimit: 10)
        #expect(state.write(.set("a", 1, Self.dates), bytes: 1_000, waitsForRoom: true) == .madeInMemory)
        #expect(state.write(.removeAll(local: true, remote: true), bytes: 0, waitsForRoom: false) == .madeInMemory)
        #expect(state.queue.isEmpty && state.keys.isEmpty && state.queuedBytes == 0)
        #expect(state.pending(for: "a") == nil)
        #expect(state.flush(hasSuspectKeys: false) {} == .done)
        #expect(state.nextSequence == 3)
    }

    @Test("A write that waits for room waits while the queue is over its budget, and is woken when it falls under")
    func byteBudget() {
        var state = State(hasStores: true, hasRemoteStores: false, queueByteLimit: 1_000)
        // Alone, a value larger than the budget is queued: the queue was empty.
        #expect(
            state.write(.set("a", 1, Self.dates), bytes: 1_500, waitsForRoom: true) == .queued(startsApplying: true))
        #expect(state.write(.set("b", 2, Self.dates), bytes: 10, waitsForRoom: true) == .waitsForRoom)
        #expect(state.nextSequence == 2, "a write that waits gets no sequence")
        let woken = Counter()
        state.waitForRoom { woken.add() }
        // Writes that do not wait (awaited by their callers) are queued over it.
        #expect(state.write(.set("c", 3, Self.dates), bytes: 10, waitsForRoom: false) == .queued(startsApplying: false))
        // A promotion never waits: memory takes it, the stores do without.
        #expect(
            state.promote(
                "d", ifUnchangedSince: state.nextSequence,
                stores: .promote("d", 4, Data(count: 10), storedAt: Date(), expiresAt: nil, localStoresBefore: 1),
                bytes: 10) == .madeInMemory)
        #expect(state.queuedBytes == 1_510)

        let taken = state.takeQueued()
        let first = state.complete(taken[0..<1], hasSuspectKeys: false)
        #expect(first.roomWaiters.count == 1)
        for wake in first.roomWaiters { wake() }
        #expect(woken.value == 1)
        #expect(state.queuedBytes == 10)
        let second = state.complete(taken[1..<2], hasSuspectKeys: false)
        #expect(second.roomWaiters.isEmpty)
        #expect(state.queuedBytes == 0)
    }

    @Test("A value of unknown size counts at the mean encoded size")
    func unknownSizes() {
        var state = State(hasStores: true, hasRemoteStores: false, queueByteLimit: nil)
        _ = state.write(.set("a", 1, Self.dates), bytes: nil, waitsForRoom: false)
        #expect(state.queuedBytes == 1_024)
        state.noteEncoded(meanBytes: 24)
        _ = state.write(.set("b", 1, Self.dates), bytes: nil, waitsForRoom: false)
        #expect(state.queuedBytes == 1_024 + 774)
    }

    @Test("A flush is released by the completion of the last change made before it, not earlier")
    func flushes() {
        var state = State(hasStores: true, hasRemoteStores: true, queueByteLimit: nil)
        #expect(state.flush(hasSuspectKeys: false) {} == .done, "nothing queued")
        _ = state.write(.set("a", 1, Self.dates), bytes: 0, waitsForRoom: false)
        _ = state.write(.set("b", 2, Self.dates), bytes: 0, waitsForRoom: false)
        let flushed = Counter()
        #expect(state.flush(hasSuspectKeys: false) { flushed.add() } == .waits(startsApplying: false))
        _ = state.write(.set("c", 3, Self.dates), bytes: 0, waitsForRoom: false)
        let taken = state.takeQueued()
        #expect(state.complete(taken[0..<1], hasSuspectKeys: false).flushes.isEmpty)
        let released = state.complete(taken[1..<2], hasSuspectKeys: false)
        #expect(released.flushes.count == 1)
        for resume in released.flushes { resume() }
        #expect(flushed.value == 1)
        #expect(state.complete(taken[2..<3], hasSuspectKeys: false).flushes.isEmpty)
        #expect(state.flush(hasSuspectKeys: false) {} == .done, "everything applied")
    }

    @Test("A flush whose changes leave suspect keys waits for one more batch, or a repair pass when none is queued")
    func flushWaitsForRepairs() {
        var state = State(hasStores: true, hasRemoteStores: false, queueByteLimit: nil)
        _ = state.write(.set("a", 1, Self.dates), bytes: 0, waitsForRoom: false)
        let flushed = Counter()
        #expect(state.flush(hasSuspectKeys: false) { flushed.add() } == .waits(startsApplying: false))
        let taken = state.takeQueued()
        #expect(state.complete(taken[...], hasSuspectKeys: true).flushes.isEmpty, "a store has suspect keys")
        #expect(state.takeQueued().isEmpty)
        #expect(state.isApplying, "the writer applies a repair pass before it stops")
        let repaired = state.complete(ArraySlice(), hasSuspectKeys: true)
        for resume in repaired.flushes { resume() }
        #expect(flushed.value == 1, "the repair pass releases the flush, whatever the repairs did")
        #expect(state.takeQueued().isEmpty)
        #expect(!state.isApplying, "then the writer stops")

        // Idle, with suspect keys: a flush starts a repair pass.
        #expect(state.flush(hasSuspectKeys: true) {} == .waits(startsApplying: true))
        #expect(state.isApplying)
        // A batch taken after it carries the repairs: its completion releases it.
        #expect(state.write(.set("b", 2, Self.dates), bytes: 0, waitsForRoom: false) == .queued(startsApplying: false))
        let batch = state.takeQueued()
        #expect(state.complete(batch[...], hasSuspectKeys: true).flushes.count == 1)
        #expect(state.flush(hasSuspectKeys: false) {} == .done, "no suspect keys: nothing to wait for")

        // While the writer applies, the batch in flight may have been planned before
        // the flush: the flush waits for it, then for one more.
        let later = Counter()
        #expect(state.flush(hasSuspectKeys: true) { later.add() } == .waits(startsApplying: false))
        #expect(state.takeQueued().isEmpty)
        #expect(state.isApplying)
        #expect(state.complete(ArraySlice(), hasSuspectKeys: true).flushes.isEmpty)
        #expect(state.takeQueued().isEmpty)
        for resume in state.complete(ArraySlice(), hasSuspectKeys: true).flushes { resume() }
        #expect(later.value == 1)
        #expect(state.takeQueued().isEmpty)
        #expect(!state.isApplying)
    }

    @Test(
        "A promotion queued for the stores is no change (it drops no read's promotion) but reads answer it until it is applied"
    )
    func promotionsAreReadUntilApplied() {
        var state = State(hasStores: true, hasRemoteStores: true, queueByteLimit: nil)
        let ticket = state.beginRead("k").ticket
        let outcome = state.promote(
            "k", ifUnchangedSince: ticket,
            stores: .promote("k", 1, Data([1]), storedAt: Date(), expiresAt: nil, localStoresBefore: 1), bytes: 1)
        #expect(outcome == .queued(startsApplying: true))
        #expect(!state.hasChanged("k", since: ticket))
        #expect(state.promote("k", ifUnchangedSince: ticket, stores: nil, bytes: 0) == .madeInMemory)
        guard case .value(1, _, _)? = state.pending(for: "k") else {
            Issue.record("a queued promotion is not read: \(state.pending(for: "k") as Any)")
            return
        }
        // A clear of the remote stores queued after it leaves the copy in the local
        // stores: reads still answer it.
        _ = state.write(.removeAll(local: false, remote: true), bytes: 0, waitsForRoom: false)
        guard case .value(1, _, _)? = state.pending(for: "k") else {
            Issue.record("a clear of the remote stores hides the local copy: \(state.pending(for: "k") as Any)")
            return
        }
        let batch = state.takeQueued()
        _ = state.complete(batch[...], hasSuspectKeys: false)
        #expect(state.pending(for: "k") == nil)
        #expect(state.keys.isEmpty)
        state.endRead(ticket)
    }
}

/// A count shared with a `@Sendable` closure.
final class Counter: Sendable {
    private let count = Mutex(0)
    func add() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}
