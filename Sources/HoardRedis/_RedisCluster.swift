#if Redis
import NIOCore
import Synchronization

/// The client side of a Redis Cluster: which primary owns each of the 16,384 hash
/// slots, one connection pool per node, and the routing of a command to the owner of
/// its key's slot.
///
/// - **Slot map.** Read with `CLUSTER SLOTS` from the first node that answers: the
///   known primaries, then the seeds. Read on first use, after a `MOVED`, and after a
///   connection to a node fails; concurrent reasons share one read.
/// - **Redirections.** `MOVED <slot> <host:port>`: the slot has a new owner; it is
///   recorded at once, the whole map read again, and the command sent there.
///   `ASK <slot> <host:port>`: the slot is migrating and this key already lives on
///   the target; the command is sent there once, preceded by `ASKING`, without
///   changing the map. `TRYAGAIN` (a multi-key command during a migration) and
///   `CLUSTERDOWN` (the cluster is failing over) are retried after a short wait.
/// - **Bounded.** At most ``maximumAttempts`` sends per command; then the last error,
///   or ``RedisError/Code/clusterDown`` when the map did not settle.
/// - **Every number from a node is checked.** A slot outside `0..<16384` or a port
///   outside `1...65535`, in a redirection or in `CLUSTER SLOTS`, and ranges that
///   claim one slot twice, are ``RedisError/Code/protocolError``; nothing of such a
///   reply is used, so no reply traps.
/// - **Failures are errors, never wrong values.** A command whose node cannot be
///   reached fails with the connection error once the attempts are spent; while a
///   replica is being promoted, reads and writes of the failed primary's slots fail
///   and the others go on.
final class _RedisCluster: Sendable {
    /// A node's address, as `CLUSTER SLOTS` and redirections report it.
    typealias Address = ServerAddress

    /// How many times one command is sent at most, redirections and retries included.
    static let maximumAttempts = 6

    private struct State {
        /// The owner of each slot, as an index into `primaries`; -1 when unknown.
        var owners = [Int16](repeating: -1, count: _RedisHashSlot.count)
        var primaries: [Address] = []
        var pools: [Address: _RedisConnectionPool] = [:]
        /// The map read in flight, which every caller that needs a new map awaits.
        var refresh: Task<RedisError?, Never>?
        var isShutdown = false
    }

    let seeds: [Address]
    /// Called with the primaries whenever the set of them changes (a failover, a
    /// node added), outside every lock.
    private let onPrimariesChanged: (@Sendable ([Address]) -> Void)?
    private let template: _RedisConnectionPool.Settings
    private let group: any EventLoopGroup
    private let state = Mutex(State())

    /// - Parameters:
    ///   - seeds: Nodes to read the slot map from at first.
    ///   - template: The settings of every node's pool; host and port are replaced.
    ///   - group: Where every connection runs.
    ///   - onPrimariesChanged: Called with the primaries whenever their set changes.
    init(
        seeds: [Address], template: _RedisConnectionPool.Settings, group: any EventLoopGroup,
        onPrimariesChanged: (@Sendable ([Address]) -> Void)? = nil
    ) {
        self.seeds = seeds
        self.onPrimariesChanged = onPrimariesChanged
        self.template = template
        self.group = group
    }

    // MARK: Nodes

    /// The pool of the node at `address`, created on first use.
    func pool(for address: Address) -> _RedisConnectionPool {
        state.withLock { state in
            if let pool = state.pools[address] { return pool }
            var settings = template
            settings.connection.host = address.host
            settings.connection.port = address.port
            settings.log = _RedisLog(logger: template.log.logger, endpoint: address.description)
            let pool = _RedisConnectionPool(settings: settings, group: group)
            state.pools[address] = pool
            return pool
        }
    }

    /// The primary that owns `slot`, reading the map when it is not known yet.
    func owner(of slot: Int) async throws(RedisError) -> Address {
        if let owner = knownOwner(of: slot) { return owner }
        try await refreshMap()
        if let owner = knownOwner(of: slot) { return owner }
        throw RedisError(.clusterDown, "No node of the Redis cluster serves hash slot \(slot).")
    }

    private func knownOwner(of slot: Int) -> Address? {
        state.withLock { state in
            let index = Int(state.owners[slot])
            return index >= 0 ? state.primaries[index] : nil
        }
    }

    /// Every primary of the current map (read first when none is known).
    func primaries() async throws(RedisError) -> [Address] {
        let known = state.withLock { $0.primaries }
        if !known.isEmpty { return known }
        try await refreshMap()
        return state.withLock { $0.primaries }
    }

    /// Closes every pool.
    func shutdown() async {
        let (pools, refresh) = state.withLock { state in
            state.isShutdown = true
            return (Array(state.pools.values), state.refresh)
        }
        refresh?.cancel()
        for pool in pools { await pool.shutdown() }
    }

    // MARK: Sending

    /// Sends `command`, whose keys all hash to `slot`, to the slot's owner, following
    /// redirections, and returns its reply (which may be an error reply other than a
    /// redirection).
    func send(_ command: _RedisCommand, slot: Int) async throws(RedisError) -> _RESPValue {
        try await send([command], slot: slot)[0]
    }

    /// Sends `commands`, whose keys all hash to `slot`, to the slot's owner in one
    /// round trip, in order; a command redirected is sent again on its own, in order,
    /// where the redirection says. Returns one reply per command.
    ///
    /// - Parameter trailing: Commands of no key (`PUBLISH`) that any node may run,
    ///   sent in the same round trip after `commands`; when some of `commands` had
    ///   to be sent again, they are sent again too, after them (so an announcement
    ///   never comes only before the change it announces). Their replies follow.
    func send(
        _ commands: [_RedisCommand], slot: Int, trailing: [_RedisCommand] = []
    ) async throws(RedisError) -> [_RESPValue] {
        let address = try await owner(of: slot)
        var replies: [_RESPValue]
        do {
            replies = try await pool(for: address).withConnection { connection throws(RedisError) in
                try await connection.send(commands + trailing)
            }
        } catch  where Self.isConnectionFailure(error) {
            // The node may be gone (a failover): read the map again, then per command.
            _ = try? await refreshMap()
            var results: [_RESPValue] = []
            for command in commands { results.append(try await sendOne(command, slot: slot, after: error)) }
            for command in trailing { results.append(try await sendOne(command, slot: slot, after: nil)) }
            return results
        }
        var resent = false
        for index in commands.indices {
            guard let redirection = try _RedisRedirection(replies[index], command: commands[index].name) else {
                continue
            }
            replies[index] = try await sendOne(commands[index], slot: slot, after: nil, first: redirection)
            resent = true
        }
        if resent {
            for (offset, command) in trailing.enumerated() {
                replies[commands.count + offset] = try await sendOne(command, slot: slot, after: nil)
            }
        }
        return replies
    }

    /// Sends one command until it is answered with something other than a
    /// redirection, or the attempts are spent.
    ///
    /// - Parameters:
    ///   - previousError: The connection failure of an attempt already made.
    ///   - first: The redirection an attempt already made was answered with.
    private func sendOne(
        _ command: _RedisCommand, slot: Int, after previousError: RedisError?, first: _RedisRedirection? = nil
    ) async throws(RedisError) -> _RESPValue {
        var lastError = previousError
        var pending = first
        var asking: Address?
        for _ in 1..<Self.maximumAttempts {
            switch pending {
            case .moved(let movedSlot, let address):
                record(owner: address, of: movedSlot)
                Task { _ = try? await self.refreshMap() }
            case .ask(let address):
                asking = address
            case .tryAgain:
                try? await Task.sleep(for: template.initialReconnectDelay)
                _ = try? await refreshMap()
            case nil:
                break
            }
            pending = nil
            let target: Address
            do throws(RedisError) {
                if let asking { target = asking } else { target = try await owner(of: slot) }
            } catch {
                lastError = error
                try? await Task.sleep(for: template.initialReconnectDelay)
                continue
            }
            let reply: _RESPValue
            do {
                let askingNow = asking != nil
                reply = try await pool(for: target).withConnection { connection throws(RedisError) in
                    if askingNow { return try await connection.send([_RedisCommand("ASKING"), command])[1] }
                    return try await connection.send(command)
                }
            } catch  where Self.isConnectionFailure(error) {
                lastError = error
                asking = nil
                try? await Task.sleep(for: template.initialReconnectDelay)
                _ = try? await refreshMap()
                continue
            }
            asking = nil
            guard let redirection = try _RedisRedirection(reply, command: command.name) else { return reply }
            pending = redirection
        }
        throw lastError
            ?? RedisError(
                .clusterDown,
                "The Redis cluster kept redirecting \(command.name) for hash slot \(slot): its slot map did not "
                    + "settle within \(Self.maximumAttempts) attempts.",
                command: command.name)
    }

    /// Whether `error` says the node could not be reached or went away, so that the
    /// map may have changed.
    private static func isConnectionFailure(_ error: RedisError) -> Bool {
        error.code == .connectionFailed || error.code == .connectionClosed || error.code == .timeout
    }

    // MARK: The slot map

    /// Records that `address` owns `slot` (a `MOVED` said so), until the next map read.
    /// A slot outside the map is ignored (``_RedisRedirection`` never gives one), and
    /// so is a new primary once as many are known as a slot map can name: the map
    /// read that follows every `MOVED` settles the owner then.
    private func record(owner address: Address, of slot: Int) {
        let added: [Address]? = state.withLock { state in
            guard state.owners.indices.contains(slot) else { return nil }
            if let index = state.primaries.firstIndex(of: address) {
                state.owners[slot] = Int16(index)
                return nil
            }
            guard state.primaries.count < _RedisHashSlot.count else { return nil }
            state.primaries.append(address)
            state.owners[slot] = Int16(state.primaries.count - 1)
            return state.primaries
        }
        if let added { onPrimariesChanged?(added) }
    }

    /// Reads the slot map again; callers that come while a read is in flight await
    /// that one.
    func refreshMap() async throws(RedisError) {
        let task: Task<RedisError?, Never> = state.withLock { state in
            if let refresh = state.refresh { return refresh }
            let refresh = Task { await self.readMap() }
            state.refresh = refresh
            return refresh
        }
        let error = await task.value
        state.withLock { state in
            if state.refresh == task { state.refresh = nil }
        }
        if let error { throw error }
    }

    /// Reads `CLUSTER SLOTS` from the first node that answers and installs the map.
    ///
    /// - Returns: The error of the last node tried when none answered.
    private func readMap() async -> RedisError? {
        let candidates: [Address] = state.withLock { state in
            var seen = Set<Address>()
            return (state.primaries + seeds + Array(state.pools.keys)).filter { seen.insert($0).inserted }
        }
        var lastError: RedisError?
        for address in candidates {
            if state.withLock({ $0.isShutdown }) { return RedisError(.shutdown, "The store has been shut down.") }
            do {
                let reply = try await pool(for: address).withConnection { connection throws(RedisError) in
                    try await connection.send(_RedisCommand("CLUSTER", "SLOTS"))
                }
                let map = try Self.parseSlots(reply, queried: address)
                let changed = state.withLock { state in
                    defer {
                        state.owners = map.owners
                        state.primaries = map.primaries
                    }
                    return Set(state.primaries) != Set(map.primaries)
                }
                if changed { onPrimariesChanged?(map.primaries) }
                return nil
            } catch {
                lastError = error
            }
        }
        return lastError ?? RedisError(.clusterDown, "The Redis cluster configuration names no node.")
    }

    /// The owner of every slot a `CLUSTER SLOTS` reply names; slots it does not name
    /// stay unknown.
    ///
    /// - Throws: ``RedisError/Code/protocolError`` when a range is not of the
    ///   documented shape, its slots are not within `0..<16384` with its start not
    ///   after its end, it claims a slot an earlier range claimed, or its primary's
    ///   port is not within `1...65535`; ``RedisError/Code/serverError`` when the
    ///   server refused the command. Every number of the reply is checked before it is
    ///   used, so no reply traps or names more primaries than there are slots.
    static func parseSlots(
        _ reply: _RESPValue, queried: Address
    ) throws(RedisError) -> (owners: [Int16], primaries: [Address]) {
        if let message = reply.errorMessage {
            throw RedisError(
                .serverError, "CLUSTER SLOTS was refused: \(message) (is the server in cluster mode?)",
                command: "CLUSTER", serverMessage: message)
        }
        guard let ranges = reply.elements else {
            throw RedisError(
                .protocolError, "CLUSTER SLOTS was answered with \(reply), not an array.", command: "CLUSTER")
        }
        var owners = [Int16](repeating: -1, count: _RedisHashSlot.count)
        var primaries: [Address] = []
        for range in ranges {
            guard let fields = range.elements, fields.count >= 3, case .integer(let start) = fields[0],
                case .integer(let end) = fields[1], let node = fields[2].elements, node.count >= 2,
                let host = node[0].string, case .integer(let port) = node[1],
                0 <= start, start <= end, end < _RedisHashSlot.count
            else {
                throw RedisError(
                    .protocolError, "CLUSTER SLOTS was answered with a range of an unexpected shape: \(range).",
                    command: "CLUSTER")
            }
            guard (1...65535).contains(port) else {
                throw RedisError(
                    .protocolError,
                    "CLUSTER SLOTS was answered with a node on port \(port), outside 1...65535: \(range).",
                    command: "CLUSTER")
            }
            let slots = Int(start)...Int(end)
            if let claimed = slots.first(where: { owners[$0] != -1 }) {
                throw RedisError(
                    .protocolError, "CLUSTER SLOTS was answered with slot \(claimed) in two ranges: \(range).",
                    command: "CLUSTER")
            }
            // An empty host means "the node you asked"; "?" an endpoint it does not know.
            guard host != "?" else { continue }
            let address = Address(host: host.isEmpty ? queried.host : host, port: Int(port))
            let index: Int
            if let known = primaries.firstIndex(of: address) {
                index = known
            } else {
                primaries.append(address)
                index = primaries.count - 1
            }
            for slot in slots { owners[slot] = Int16(index) }
        }
        return (owners, primaries)
    }
}

extension ServerAddress {
    /// Parses `host:port` as a redirection or a `redis+cluster://` URL names it
    /// (`[::1]:7000` for IPv6); `nil` when there is no port, or it is not a decimal
    /// number within `1...65535`.
    init?(redirection text: Substring) {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
            (1...65535).contains(port)
        else {
            return nil
        }
        var host = text[..<colon]
        if host.hasPrefix("["), host.hasSuffix("]") { host = host.dropFirst().dropLast() }
        self.init(host: String(host), port: port)
    }
}

/// What a cluster node's error reply asks the client to do instead.
enum _RedisRedirection: Equatable {
    /// `MOVED <slot> <host:port>`: the slot belongs to another node from now on.
    case moved(slot: Int, to: _RedisCluster.Address)
    /// `ASK <slot> <host:port>`: this key is on the node the slot migrates to; ask once.
    case ask(to: _RedisCluster.Address)
    /// `TRYAGAIN` or `CLUSTERDOWN`: try again shortly.
    case tryAgain

    /// The redirection `reply` asks for, or `nil` when it is not an error reply of
    /// one.
    ///
    /// - Parameter command: The name of the command answered, for the error.
    /// - Throws: ``RedisError/Code/protocolError`` when `reply` is a `MOVED` or `ASK`
    ///   whose slot is not a number within `0..<16384` or whose address is not
    ///   `host:port` with a port within `1...65535`: the node is not following the
    ///   protocol, and no part of such a reply is used.
    init?(_ reply: _RESPValue, command: String? = nil) throws(RedisError) {
        guard let message = reply.errorMessage else { return nil }
        let words = message.split(separator: " ")
        switch words.first {
        case "MOVED"?, "ASK"?:
            guard words.count == 3, let slot = Int(words[1]), (0..<_RedisHashSlot.count).contains(slot),
                let address = _RedisCluster.Address(redirection: words[2])
            else {
                throw RedisError(
                    .protocolError,
                    "A Redis Cluster node answered with a redirection that is not \"\(words[0]) <slot 0-16383> "
                        + "<host:port>\": \(message.prefix(200))",
                    command: command, serverMessage: message)
            }
            self = words[0] == "MOVED" ? .moved(slot: slot, to: address) : .ask(to: address)
        case "TRYAGAIN"?, "CLUSTERDOWN"?:
            self = .tryAgain
        default:
            return nil
        }
    }
}
#endif
