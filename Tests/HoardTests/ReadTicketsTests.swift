import Testing

@testable import Hoard

/// The reads in flight and the changes they must see, by themselves.
@Suite("Cache writer: reads' tickets")
struct ReadTicketsTests {
    typealias Tickets = _ReadTickets<String>

    static func string(_ key: String) -> () -> String { { key } }

    @Test("A change with no read in flight is not remembered; one made during a read is, until the last read ends")
    func changesAreKeptForReads() {
        var tickets = Tickets()
        tickets.noteChange(of: "k", at: 1)
        tickets.noteChange(ofString: "s", at: 2)
        #expect(tickets.changed.isEmpty && tickets.changedStrings.isEmpty)

        tickets.begin(3)
        tickets.begin(3)
        tickets.noteChange(of: "k", at: 3)
        tickets.noteChange(ofString: "s", at: 4)
        #expect(tickets.hasChanged("k", keyString: Self.string("k"), since: 3))
        #expect(tickets.hasChanged("other", keyString: Self.string("s"), since: 3), "found by its string")
        #expect(!tickets.hasChanged("k", keyString: Self.string("k"), since: 4), "changed before that ticket")
        #expect(!tickets.hasChanged("j", keyString: Self.string("j"), since: 3))

        tickets.end(3)
        #expect(!tickets.isEmpty, "one hold of the ticket is left")
        #expect(tickets.hasChanged("k", keyString: Self.string("k"), since: 3))
        tickets.end(3)
        #expect(tickets.isEmpty)
        #expect(tickets.changed.isEmpty && tickets.changedStrings.isEmpty)
    }

    @Test("A clear changes every key, with or without reads in flight")
    func clearsChangeEveryKey() {
        var tickets = Tickets()
        tickets.noteClear(at: 5)
        #expect(tickets.hasClearedAll(since: 5))
        #expect(!tickets.hasClearedAll(since: 6))
        #expect(tickets.hasChanged("any", keyString: Self.string("any"), since: 5))
        #expect(!tickets.hasChanged("any", keyString: Self.string("any"), since: 6))
    }

    @Test("Pruning forgets only changes older than the oldest read in flight")
    func pruningKeepsWhatReadsNeed() {
        var tickets = Tickets()
        tickets.begin(1)
        for sequence in 1...500 { tickets.noteChange(of: "old\(sequence)", at: UInt64(sequence)) }
        tickets.begin(501)
        tickets.end(1)
        for sequence in 501...2_100 { tickets.noteChange(of: "new\(sequence)", at: UInt64(sequence)) }
        // The read of ticket 1 ended: the changes before 501 can drop nothing.
        #expect(tickets.changed["old1"] == nil)
        #expect(tickets.changed.count < 2_100)
        #expect(tickets.hasChanged("new501", keyString: Self.string("new501"), since: 501))
        #expect(tickets.hasChanged("new2100", keyString: Self.string("new2100"), since: 501))
    }
}
