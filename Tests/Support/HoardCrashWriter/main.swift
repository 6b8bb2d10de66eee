// The child process of the disk store's crash-safety, multi-process and fault
// tests, and of the message log's multi-process and crash tests. Not a product: tests start it, talk to it over stdout, and kill it.
//
//   HoardCrashWriter write DIR ROUND        write forever: "will SEQ KEY" before each set of KEY
//                                           ("willrm SEQ KEY" before a removal),
//                                           "ok SEQ KEY" once a set returned (durable), "rm SEQ KEY"
//                                           once a removal returned, "bad …" on a wrong read
//   HoardCrashWriter writeN DIR NAME COUNT  write COUNT entries NAME-0…, overwrite "shared"; then "done"
//   HoardCrashWriter fsize DIR              hit RLIMIT_FSIZE on a large value; report what happened
//   HoardCrashWriter permission DIR         lose write permission on blobs/; report what happened
//   HoardCrashWriter open-as-nobody DIR     drop to the nobody user (from root), try to open
//   HoardCrashWriter settings-write DOMAIN NAMESPACE COUNT
//                                           set key-0…: "value-0"… in a SettingsStore<String> of that
//                                           settings domain ("hoard.settings" is the standard one); "done"
//   HoardCrashWriter settings-read DOMAIN NAMESPACE KEY… [-KEY VALUE…]
//                                           read each KEY from a SettingsStore<String> of that settings
//                                           domain: "KEY: VALUE" or "KEY: miss"; the -KEY VALUE pairs
//                                           after the keys are the command line's defaults (argument domain)
//   HoardCrashWriter log-default NAME COUNT append COUNT messages to the log NAME in the default location;
//                                           "done PATH"
//   HoardCrashWriter log FILE WRITER COUNT BUDGET OVERWRITES
//                                           append COUNT tagged messages (0: forever) to the
//                                           MessageLog<Data> at FILE, every fifth append a batch
//                                           of one; "ready" first, "ok SEQ" once each append
//                                           returned, "done" at the end
//   HoardCrashWriter log-wrap-fsize FILE BATCH
//                                           append two messages to a new MessageLog<Data> at
//                                           FILE (budget 64 + 1,000), then, with RLIMIT_FSIZE at
//                                           the file's size, a third that wraps (as a batch of one
//                                           when BATCH is true), so its write past the end fails:
//                                           "thrown CODE" or "appended", then "done"
//   HoardCrashWriter log-ahead-fsize FILE   append three messages of 1.5 MB to a new MessageLog<Data>
//                                           at FILE that holds exactly three, then, with RLIMIT_FSIZE
//                                           at 64, a fourth that wraps to 64 without a marker, so its
//                                           checkpoint is written and its record fails:
//                                           "thrown CODE" or "appended", then "done"
//   HoardCrashWriter exit-without-flush DIR KIND FROM
//                                           KIND cache: write 100 values (key-N: "value-N") behind
//                                           through a Cache named "exit" over a DiskStore at DIR;
//                                           KIND http: one GET of https://example.com/feed through an
//                                           HTTPResponseCache (storage "exit-http" at DIR, an origin
//                                           in this process answering "feed", max-age 3600).
//                                           The store's writes wait until exit begins, so nothing has
//                                           reached it when this says "queued" and calls exit(0)
//                                           without flush(), from the main thread (FROM main) or a
//                                           task (FROM task)
//   HoardCrashWriter named-store PROGRAM NAME
//                                           open DiskStore(named: NAME), in the program folder
//                                           PROGRAM ("-": the default one); print "dir PATH", then
//                                           "old VALUE" or "old miss" for the key "old"; set "new"
//
// Every line is written with one write(2) call, so a line the parent reads is whole.
import Foundation

// Testable: the settings tests pass a settings domain of their own, which only
// internal initializers take.
@testable import Hoard

/// Writes one line to stdout at once.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

/// A value that describes itself: which key, which write, how long, and filler
/// derived from those, so a reader can tell an intact value from any other bytes.
enum Payload {
    /// Filler bytes, computed once; a value takes a slice starting at an offset
    /// derived from its sequence number, so two writes' bytes differ.
    static let filler: [UInt8] = {
        // A 4 KiB block, doubled up to 1 MiB + 256 bytes: cheap even in a debug build.
        var bytes = [UInt8](repeating: 0, count: 4_096)
        for i in bytes.indices { bytes[i] = UInt8(truncatingIfNeeded: i &* 131 &+ (i >> 9)) }
        while bytes.count < (1 << 20) + 256 { bytes += bytes }
        return bytes
    }()

    static func make(key: String, sequence: Int, size: Int) -> Data {
        var data = Data("HOARD|\(key)|\(sequence)|\(size)|".utf8)
        let header = data.count
        if size > header {
            let offset = (sequence &* 7) & 255
            filler.withUnsafeBufferPointer { data.append(contentsOf: $0[offset..<(offset + size - header)]) }
        }
        return data
    }

    /// The sequence number of an intact value for `key`, or `nil` for any other bytes.
    static func check(_ data: Data, key: String) -> Int? {
        let bytes = [UInt8](data)
        var fields: [String] = []
        var start = 0
        var index = 0
        while fields.count < 4, index < bytes.count {
            if bytes[index] == UInt8(ascii: "|") {
                fields.append(String(decoding: bytes[start..<index], as: UTF8.self))
                start = index + 1
            }
            index += 1
        }
        guard fields.count == 4, fields[0] == "HOARD", fields[1] == key,
            let sequence = Int(fields[2]), let size = Int(fields[3])
        else { return nil }
        return make(key: key, sequence: sequence, size: size) == data ? sequence : nil
    }
}

/// A small deterministic generator (SplitMix64).
struct Generator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
}

func fail(_ message: String) -> Never {
    say("error \(message)")
    exit(2)
}

func open(_ directory: String, _ configuration: DiskStore.Configuration = .init()) -> DiskStore {
    do {
        return try DiskStore(directory: URL(fileURLWithPath: directory), configuration: configuration)
    } catch {
        fail("open: \(error)")
    }
}

/// Keys the crash writer uses: plain ones, and some that would be dangerous as
/// file names.
func crashKey(_ n: Int) -> String {
    switch n % 10 {
    case 0: return "../../escape-\(n)"
    case 1: return "dir/sub/\(n)"
    case 2: return "ключ-\(n)-é"
    default: return "key-\(n)"
    }
}

func crashSize(_ rng: inout Generator) -> Int {
    switch rng.below(100) {
    case 0..<60: return 40 + rng.below(2_000)
    case 60..<85: return 2_000 + rng.below(30_000)
    default: return 40_000 + rng.below(260_000)
    }
}

func runWriter(directory: String, round: Int) {
    let store = open(directory)
    var rng = Generator(state: UInt64(round) &* 7919 &+ 1)
    let namespace = "crash"
    say("ready")
    var step = 0
    while true {
        step += 1
        let sequence = round * 10_000_000 + step
        let choice = rng.below(100)
        do {
            if choice < 70 {
                let key = crashKey(rng.below(300))
                say("will \(sequence) \(key)")
                let data = Payload.make(key: key, sequence: sequence, size: crashSize(&rng))
                try store.set(data, for: key, in: namespace, storedAt: Date(), expiresAt: nil)
                say("ok \(sequence) \(key)")
            } else if choice < 80 {
                var writes: [CacheStoreWrite] = []
                var keys: [String] = []
                for _ in 0..<(2 + rng.below(6)) {
                    let key = crashKey(rng.below(300))
                    say("will \(sequence) \(key)")
                    keys.append(key)
                    let data = Payload.make(key: key, sequence: sequence, size: crashSize(&rng))
                    writes.append(.set(data, for: key, in: namespace, storedAt: Date(), expiresAt: nil))
                }
                try store.write(writes)
                for key in keys { say("ok \(sequence) \(key)") }
            } else if choice < 90 {
                let key = crashKey(rng.below(300))
                say("willrm \(sequence) \(key)")
                try store.removeValue(for: key, in: namespace)
                say("rm \(sequence) \(key)")
            } else {
                let key = crashKey(rng.below(300))
                if let entry = try store.entry(for: key, in: namespace), Payload.check(entry.data, key: key) == nil {
                    say("bad read of \(key): \(entry.data.count) bytes that are not an intact value for it")
                }
            }
        } catch {
            fail("\(error)")
        }
    }
}

func runCounted(directory: String, name: String, count: Int) {
    let store = open(directory)
    var rng = Generator(state: UInt64(truncatingIfNeeded: name.hashValue))
    for i in 0..<count {
        let key = "\(name)-\(i)"
        let size = i % 10 == 0 ? 40_000 + rng.below(20_000) : 50 + rng.below(3_000)
        do {
            try store.set(
                Payload.make(key: key, sequence: i, size: size), for: key, in: "shared", storedAt: Date(),
                expiresAt: nil)
            try store.set(
                Payload.make(key: "shared", sequence: i, size: 100 + i), for: "shared", in: "shared", storedAt: Date(),
                expiresAt: nil)
            if let entry = try store.entry(for: "shared", in: "shared"), Payload.check(entry.data, key: "shared") == nil
            {
                say("bad read of shared")
            }
        } catch {
            fail("\(error)")
        }
    }
    say("done")
}

func code(of error: any Error) -> String {
    (error as? HoardError)?.code.rawValue ?? "\(type(of: error))"
}

func temporaryFiles(in directory: String) -> Int {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: directory + "/blobs")) ?? []
    return names.filter { $0.hasSuffix(".tmp") }.count
}

/// Fills in before, then sets a file size limit below the next value's size.
func runFileSizeLimit(directory: String) {
    signal(SIGXFSZ, SIG_IGN)  // so that writing past the limit fails with EFBIG instead of killing us
    let store = open(directory)
    let small = Payload.make(key: "small", sequence: 1, size: 500)
    let large = Payload.make(key: "large", sequence: 1, size: 100_000)
    do {
        try store.set(small, for: "small", in: "ns", storedAt: Date(), expiresAt: nil)
        try store.set(large, for: "large", in: "ns", storedAt: Date(), expiresAt: nil)
    } catch {
        fail("before the limit: \(error)")
    }
    var limit = rlimit(rlim_cur: 256 << 10, rlim_max: 256 << 10)
    guard setrlimit(Int32(RLIMIT_FSIZE.rawValue), &limit) == 0 else { fail("setrlimit: \(errno)") }
    do {
        try store.set(
            Payload.make(key: "huge", sequence: 2, size: 1 << 20), for: "huge", in: "ns", storedAt: Date(),
            expiresAt: nil)
        say("stored")
    } catch {
        say("thrown \(code(of: error))")
    }
    do {
        let hugeGone = try store.entry(for: "huge", in: "ns") == nil
        let smallOK = try store.entry(for: "small", in: "ns")?.data == small
        let largeOK = try store.entry(for: "large", in: "ns")?.data == large
        say(
            "after huge=\(hugeGone ? "absent" : "present") small=\(smallOK) large=\(largeOK) temporary=\(temporaryFiles(in: directory))"
        )
        try store.set(
            Payload.make(key: "next", sequence: 3, size: 50_000), for: "next", in: "ns", storedAt: Date(),
            expiresAt: nil)
        let nextOK =
            try store.entry(for: "next", in: "ns")?.data == Payload.make(key: "next", sequence: 3, size: 50_000)
        say("next \(nextOK)")
    } catch {
        say("error after the limit: \(error)")
    }
    say("done")
}

/// Stores some values, then loses write permission on `blobs/` (as root: by
/// dropping to the `nobody` user, as root ignores permission bits).
func runPermission(directory: String) {
    let store = open(directory)
    let small = Payload.make(key: "small", sequence: 1, size: 500)
    do {
        try store.set(small, for: "small", in: "ns", storedAt: Date(), expiresAt: nil)
    } catch {
        fail("before: \(error)")
    }
    if geteuid() == 0 {
        guard setgid(65534) == 0, setuid(65534) == 0 else { fail("could not drop to nobody: \(errno)") }
        say("dropped to uid \(geteuid())")
    } else {
        guard chmod(directory + "/blobs", 0o500) == 0 else { fail("chmod: \(errno)") }
        say("made blobs read-only")
    }
    do {
        try store.set(
            Payload.make(key: "large", sequence: 2, size: 100_000), for: "large", in: "ns", storedAt: Date(),
            expiresAt: nil)
        say("stored")
    } catch {
        say("thrown \(code(of: error))")
    }
    do {
        let largeGone = try store.entry(for: "large", in: "ns") == nil
        let smallOK = try store.entry(for: "small", in: "ns")?.data == small
        say(
            "after large=\(largeGone ? "absent" : "present") small=\(smallOK) temporary=\(temporaryFiles(in: directory))"
        )
        let next = Payload.make(key: "next", sequence: 3, size: 300)
        try store.set(next, for: "next", in: "ns", storedAt: Date(), expiresAt: nil)
        say("next \(try store.entry(for: "next", in: "ns")?.data == next)")
    } catch {
        say("error after: \(error)")
    }
    if geteuid() != 0 {
        _ = chmod(directory + "/blobs", 0o700)
    }
    say("done")
}

/// Stores a small value, then leaves `blobs/` writable and searchable but not
/// readable (as root, which ignores permission bits: gives `blobs/` to `nobody`,
/// lets `nobody` through the store's directory, and drops to that user). A value
/// file can still be created and renamed into `blobs/`; the directory cannot be
/// opened to flush its entries, which a write that spills must do before it commits.
func runUnreadableBlobs(directory: String) {
    let store = open(directory)
    let unsynced = open(directory, DiskStore.Configuration(syncsValueFiles: false))
    let small = Payload.make(key: "small", sequence: 1, size: 500)
    do {
        try store.set(small, for: "small", in: "ns", storedAt: Date(), expiresAt: nil)
    } catch {
        fail("before: \(error)")
    }
    let blobs = directory + "/blobs"
    if geteuid() == 0 {
        guard chown(blobs, 65534, 65534) == 0, chmod(directory, 0o711) == 0 else { fail("chown: \(errno)") }
    }
    guard chmod(blobs, 0o300) == 0 else { fail("chmod: \(errno)") }
    if geteuid() == 0 {
        guard setgid(65534) == 0, setuid(65534) == 0 else { fail("could not drop to nobody: \(errno)") }
    }
    guard opendir(blobs) == nil else { fail("blobs/ is still readable") }
    let large = Payload.make(key: "large", sequence: 2, size: 100_000)
    do {
        try store.set(large, for: "large", in: "ns", storedAt: Date(), expiresAt: nil)
        say("stored")
    } catch {
        say("thrown \(code(of: error))")
    }
    do {
        let now = Date()
        try store.write([
            .set(Payload.make(key: "a", sequence: 3, size: 100_000), for: "a", in: "ns", storedAt: now, expiresAt: nil),
            .set(Payload.make(key: "b", sequence: 4, size: 100_000), for: "b", in: "ns", storedAt: now, expiresAt: nil),
            .set(Payload.make(key: "c", sequence: 5, size: 300), for: "c", in: "ns", storedAt: now, expiresAt: nil),
        ])
        say("batch stored")
    } catch {
        say("batch thrown \(code(of: error))")
    }
    do {
        // contains(_:in:) reads no file: a row committed for a file since deleted still counts
        let absent = try ["large", "a", "b", "c"].filter { try !store.contains($0, in: "ns") }
        let smallOK = try store.entry(for: "small", in: "ns")?.data == small
        say("after absent=\(absent.joined(separator: ",")) small=\(smallOK)")
        let next = Payload.make(key: "next", sequence: 6, size: 300)
        try store.set(next, for: "next", in: "ns", storedAt: Date(), expiresAt: nil)
        say("next \(try store.entry(for: "next", in: "ns")?.data == next)")
        let unflushed = Payload.make(key: "unsynced", sequence: 7, size: 100_000)
        try unsynced.set(unflushed, for: "unsynced", in: "ns", storedAt: Date(), expiresAt: nil)
        say("unsynced \(try unsynced.entry(for: "unsynced", in: "ns")?.data == unflushed)")
    } catch {
        say("error after: \(error)")
    }
    if geteuid() != 0 {
        _ = chmod(blobs, 0o700)
    }
    say("done")
}

/// Drops to the `nobody` user, then tries to open the store.
func runOpenAsNobody(directory: String) {
    guard setgid(65534) == 0, setuid(65534) == 0 else { fail("could not drop to nobody: \(errno)") }
    do {
        _ = try DiskStore(directory: URL(fileURLWithPath: directory))
        say("opened")
    } catch {
        say("thrown \(code(of: error))")
    }
}

/// Writes `count` settings in `namespace` of the settings domain `domain`.
func runSettingsWrite(domain: String, namespace: String, count: Int) {
    do {
        let settings = try SettingsStore<String>(
            namespace: namespace, codec: .cacheValue, configuration: .init(), domain: _SettingsDomain(name: domain))
        for i in 0..<count {
            try settings.set("value-\(i)", for: "key-\(i)")
        }
        say("done")
    } catch {
        fail("settings: \(error)")
    }
}

/// Reads `keys` from `namespace` of the settings domain `domain`.
func runSettingsRead(domain: String, namespace: String, keys: [String]) {
    do {
        let settings = try SettingsStore<String>(
            namespace: namespace, codec: .cacheValue, configuration: .init(), domain: _SettingsDomain(name: domain))
        for key in keys {
            say("\(key): \(settings.value(for: key) ?? "miss")")
        }
    } catch {
        fail("settings: \(error)")
    }
}

/// Appends `count` messages to the log `name` in the default location.
func runLogDefault(name: String, count: Int) {
    do {
        let url = try MessageLog<String>.defaultFileURL(named: name)
        let log = try MessageLog<String>(
            fileURL: url, maximumBytes: 64 << 10, overwritesOldMessages: true, codec: .cacheValue)
        for i in 0..<count {
            try log.append("message \(i)")
        }
        say("done \(url.path)")
    } catch {
        fail("log: \(error)")
    }
}

/// A message that says who wrote it, the same bytes as the tests' `taggedMessage`:
/// `writer` and `sequence` in 8 bytes each (little endian), then `padding` bytes
/// derived from both.
func taggedMessage(writer: Int, sequence: Int, padding: Int) -> Data {
    var data = Data()
    withUnsafeBytes(of: UInt64(writer).littleEndian) { data.append(contentsOf: $0) }
    withUnsafeBytes(of: UInt64(sequence).littleEndian) { data.append(contentsOf: $0) }
    for i in 0..<padding { data.append(UInt8(truncatingIfNeeded: writer &* 31 &+ sequence &* 7 &+ i)) }
    return data
}

/// Appends tagged messages to a message log, acknowledging each once it returned.
func runLogAppender(file: String, writer: Int, count: Int, budget: Int, overwrites: Bool) {
    let log: MessageLog<Data>
    do {
        log = try MessageLog<Data>(
            fileURL: URL(fileURLWithPath: file), maximumBytes: budget, overwritesOldMessages: overwrites,
            codec: .cacheValue)
    } catch {
        fail("open: \(error)")
    }
    say("ready")
    var sequence = 0
    while count == 0 || sequence < count {
        let message = taggedMessage(writer: writer, sequence: sequence, padding: (sequence &* 13) % 90)
        do {
            if sequence % 5 == 4 {
                try log.append(contentsOf: [message])
            } else {
                try log.append(message)
            }
        } catch {
            fail("append \(sequence): \(error)")
        }
        say("ok \(sequence)")
        sequence += 1
    }
    say("done")
}

/// Appends to a log until an append that wraps must write past the file's size, which
/// RLIMIT_FSIZE then refuses: the file is left as a crash at that write leaves it.
func runLogWrapPastSizeLimit(file: String, batch: Bool) {
    signal(SIGXFSZ, SIG_IGN)  // so that writing past the limit fails with EFBIG instead of killing us
    let url = URL(fileURLWithPath: file)
    let wrapping = taggedMessage(writer: 1, sequence: 2, padding: 590 - 16)
    let log: MessageLog<Data>
    do {
        log = try MessageLog<Data>(
            fileURL: url, maximumBytes: 64 + 1_000, overwritesOldMessages: true, codec: .cacheValue)
        try log.append(taggedMessage(writer: 1, sequence: 0, padding: 600 - 16))  // 64..<672
        try log.append(taggedMessage(writer: 1, sequence: 1, padding: 300 - 16))  // 672..<980
    } catch {
        fail("before the limit: \(error)")
    }
    var limit = rlimit(rlim_cur: 980, rlim_max: 980)
    guard setrlimit(Int32(RLIMIT_FSIZE.rawValue), &limit) == 0 else { fail("setrlimit: \(errno)") }
    do {
        // At 64, after a wrap marker at 980: the marker is the write past the limit.
        if batch { try log.append(contentsOf: [wrapping]) } else { try log.append(wrapping) }
        say("appended")
    } catch {
        say("thrown \(code(of: error))")
    }
    say("done")
}

/// The largest message size of ``runLogAheadPastSizeLimit(file:)``: over 1 MiB, so that
/// a checkpoint that drops one ahead drops a record that starts more than 1 MiB before
/// its oldest record.
let aheadMessageSize = 1_500_000

func runLogAheadPastSizeLimit(file: String) {
    signal(SIGXFSZ, SIG_IGN)  // so that writing past the limit fails with EFBIG instead of killing us
    let url = URL(fileURLWithPath: file)
    let log: MessageLog<Data>
    do {
        // No room for a wrap marker after the third: the fourth wraps without one.
        log = try MessageLog<Data>(
            fileURL: url, maximumBytes: 64 + 3 * (8 + aheadMessageSize), overwritesOldMessages: true,
            codec: .cacheValue)
        for sequence in 0..<3 {
            try log.append(taggedMessage(writer: 1, sequence: sequence, padding: aheadMessageSize - 16))
        }
    } catch {
        fail("before the limit: \(error)")
    }
    var limit = rlimit(rlim_cur: 64, rlim_max: 64)
    guard setrlimit(Int32(RLIMIT_FSIZE.rawValue), &limit) == 0 else { fail("setrlimit: \(errno)") }
    do {
        // Evicts the first, writes its checkpoint in the header, then fails at its record at 64.
        try log.append(taggedMessage(writer: 1, sequence: 3, padding: aheadMessageSize - 16))
        say("appended")
    } catch {
        say("thrown \(code(of: error))")
    }
    say("done")
}

/// Opens when the process begins to exit: the handler is installed after the first
/// cache's, so it runs before Hoard's (handlers run in reverse order).
enum ExitBegan {
    static let gate = DispatchSemaphore(value: 0)
    static func install() { atexit { ExitBegan.gate.signal() } }
}

/// A store whose writes wait until the process begins to exit: without Hoard's exit
/// flush, nothing reaches it.
final class HeldUntilExitStore: CacheStore {
    let inner: DiskStore
    init(_ inner: DiskStore) { self.inner = inner }

    func entry(for key: String, in namespace: String) throws(HoardError) -> StoredEntry? {
        try inner.entry(for: key, in: namespace)
    }
    func set(_ data: Data, for key: String, in namespace: String, storedAt: Date, expiresAt: Date?) throws(HoardError) {
        Self.waitForExit()
        try inner.set(data, for: key, in: namespace, storedAt: storedAt, expiresAt: expiresAt)
    }
    func write(_ batch: [CacheStoreWrite]) throws(HoardError) {
        Self.waitForExit()
        try inner.write(batch)
    }
    static func waitForExit() {
        ExitBegan.gate.wait()
        ExitBegan.gate.signal()
    }
    func removeValue(for key: String, in namespace: String) throws(HoardError) -> Bool {
        try inner.removeValue(for: key, in: namespace)
    }
    func removeAll(in namespace: String) throws(HoardError) -> Int { try inner.removeAll(in: namespace) }
    func keys(in namespace: String) throws(HoardError) -> [String] { try inner.keys(in: namespace) }
    func contains(_ key: String, in namespace: String) throws(HoardError) -> Bool {
        try inner.contains(key, in: namespace)
    }
    func usage(in namespace: String) throws(HoardError) -> StoreUsage { try inner.usage(in: namespace) }
    func totalUsage() throws(HoardError) -> StoreUsage { try inner.totalUsage() }
    func removeExpired() throws(HoardError) -> Int { try inner.removeExpired() }
    func trim(toBytes maxBytes: Int) throws(HoardError) -> Int { try inner.trim(toBytes: maxBytes) }
    func verify(repairing: Bool) throws(HoardError) -> VerificationReport { try inner.verify(repairing: repairing) }
}

/// An origin in this process: every GET answers "feed", fresh for an hour.
struct FeedOrigin: HTTPCacheTransport {
    func send(_ request: HTTPCacheRequest) async throws -> HTTPTransportResponse {
        HTTPTransportResponse(statusCode: 200, headers: ["Cache-Control": "max-age=3600"], body: Data("feed".utf8))
    }
}

func runExitWithoutFlush(directory: String, kind: String, fromTask: Bool) -> Never {
    let store = HeldUntilExitStore(open(directory))
    let done = DispatchSemaphore(value: 0)
    // Kept alive until exit: a cache that is gone still has its queued writes flushed,
    // but this is what a program that forgets flush() looks like.
    var kept: [AnyObject] = []
    switch kind {
    case "cache":
        var configuration = Cache<String, String>.Configuration(name: "exit")
        configuration.localStores = .stores([store])
        let cache: Cache<String, String>
        do { cache = try Cache(configuration: configuration) } catch { fail("cache: \(error)") }
        ExitBegan.install()
        for index in 0..<100 { cache["key-\(index)"] = "value-\(index)" }
        kept.append(cache)
        done.signal()
    case "http":
        var storage = Cache<String, HTTPStoredResponses>.Configuration(name: "exit-http")
        storage.localStores = .stores([store])
        let http: HTTPResponseCache
        do {
            http = try HTTPResponseCache(configuration: .init(storage: storage), transport: FeedOrigin())
        } catch {
            fail("http: \(error)")
        }
        ExitBegan.install()
        kept.append(http)
        Task {
            do {
                let body = try await http.data(from: URL(string: "https://example.com/feed")!)
                guard body == Data("feed".utf8) else { fail("wrong body") }
            } catch {
                fail("request: \(error)")
            }
            done.signal()
        }
    default:
        fail("unknown kind \(kind)")
    }
    done.wait()
    say("queued")
    if fromTask {
        Task { exit(0) }
        dispatchMain()
    }
    withExtendedLifetime(kept) { exit(0) }
}

func runNamedStore(program: String, name: String) {
    do {
        if program != "-" { try DiskStore.useProgramFolder(named: program) }
        let store = try DiskStore(named: name)
        say("dir \(store.directory.path)")
        let old: String? = try store.value(for: "old")
        say("old \(old ?? "miss")")
        try store.set("written", for: "new")
    } catch {
        fail("named-store: \(error)")
    }
}

let arguments = CommandLine.arguments
guard arguments.count >= 3 else {
    fail(
        "usage: HoardCrashWriter write DIR ROUND | writeN DIR NAME COUNT | fsize DIR | permission DIR | open-as-nobody DIR"
            + " | unreadable-blobs DIR"
            + " | settings-write DOMAIN NAMESPACE COUNT | settings-read DOMAIN NAMESPACE KEY… [-KEY VALUE…]"
            + " | log-default NAME COUNT"
            + " | log FILE WRITER COUNT BUDGET OVERWRITES | log-wrap-fsize FILE BATCH | log-ahead-fsize FILE"
            + " | exit-without-flush DIR KIND FROM")
}
switch arguments[1] {
case "write":
    runWriter(directory: arguments[2], round: Int(arguments.count > 3 ? arguments[3] : "0") ?? 0)
case "writeN":
    guard arguments.count >= 5, let count = Int(arguments[4]) else { fail("usage: writeN DIR NAME COUNT") }
    runCounted(directory: arguments[2], name: arguments[3], count: count)
case "fsize":
    runFileSizeLimit(directory: arguments[2])
case "permission":
    runPermission(directory: arguments[2])
case "open-as-nobody":
    runOpenAsNobody(directory: arguments[2])
case "unreadable-blobs":
    runUnreadableBlobs(directory: arguments[2])
case "settings-write":
    guard arguments.count >= 5, let count = Int(arguments[4]) else {
        fail("usage: settings-write DOMAIN NAMESPACE COUNT")
    }
    runSettingsWrite(domain: arguments[2], namespace: arguments[3], count: count)
case "settings-read":
    let keys = arguments.dropFirst(4).prefix { !$0.hasPrefix("-") }
    guard arguments.count >= 5, !keys.isEmpty else { fail("usage: settings-read DOMAIN NAMESPACE KEY… [-KEY VALUE…]") }
    runSettingsRead(domain: arguments[2], namespace: arguments[3], keys: Array(keys))
case "log-default":
    guard arguments.count >= 4, let count = Int(arguments[3]) else { fail("usage: log-default NAME COUNT") }
    runLogDefault(name: arguments[2], count: count)
case "log":
    guard arguments.count >= 7, let writer = Int(arguments[3]), let count = Int(arguments[4]),
        let budget = Int(arguments[5]), let overwrites = Bool(arguments[6])
    else { fail("usage: log FILE WRITER COUNT BUDGET OVERWRITES") }
    runLogAppender(file: arguments[2], writer: writer, count: count, budget: budget, overwrites: overwrites)
case "log-wrap-fsize":
    guard let batch = Bool(arguments.count > 3 ? arguments[3] : "") else { fail("usage: log-wrap-fsize FILE BATCH") }
    runLogWrapPastSizeLimit(file: arguments[2], batch: batch)
case "log-ahead-fsize":
    runLogAheadPastSizeLimit(file: arguments[2])
case "named-store":
    guard arguments.count >= 4 else { fail("usage: named-store PROGRAM NAME") }
    runNamedStore(program: arguments[2], name: arguments[3])
case "exit-without-flush":
    guard arguments.count >= 5, ["main", "task"].contains(arguments[4]) else {
        fail("usage: exit-without-flush DIR cache|http main|task")
    }
    runExitWithoutFlush(directory: arguments[2], kind: arguments[3], fromTask: arguments[4] == "task")
default:
    fail("unknown mode \(arguments[1])")
}
