import Foundation

extension MemoryCache {
    /// How a ``MemoryCache`` limits, evicts and expires its entries.
    ///
    /// ```swift
    /// let images = try MemoryCache<URL, Data>(configuration: .init(
    ///     costLimit: 64 << 20,          // 64 MiB of Data
    ///     policy: .tinyLFU,
    ///     defaultExpiry: .hours(1)))
    /// ```
    public struct Configuration: Sendable {
        /// The most entries the cache holds, or `nil` for no count limit.
        /// Defaults to `nil`. Must be at least 1 (and at least ``shards``).
        public var countLimit: Int?

        /// The most total cost the cache holds, or `nil` for no cost limit.
        /// Defaults to `nil`. Must be at least 1 (and at least ``shards``).
        public var costLimit: Int?

        /// The fraction of a limit the cache evicts down to once the limit is
        /// exceeded: at 0.75 a cache of 1,000 entries that reaches 1,001 evicts down to
        /// 750. Must satisfy `0 < lowWaterMark <= 1`; at 1.0 it evicts one entry at a
        /// time. Defaults to 0.75.
        public var lowWaterMark: Double

        /// Which entries go first when the cache must make room. Defaults to
        /// ``EvictionPolicy/lru``.
        public var policy: EvictionPolicy

        /// The lifetime of entries written without an explicit ``Expiry``.
        /// Defaults to ``Expiry/never``. A NaN lifetime (`.after(.nan)`) is rejected.
        public var defaultExpiry: Expiry

        /// Independently locked parts the cache is split into, by key hash; rounded up
        /// to a power of two. Unless set, ``defaultShards(countLimit:costLimit:)``
        /// of the limits (read when the cache is created): 1 for most caches, 16 for
        /// a large cache limited by count alone. Set 1 for an eviction order exact
        /// across the whole cache. Must be between 1 and 1,024.
        ///
        /// With more than one shard, threads that touch different shards never wait
        /// for each other; each shard holds `countLimit / shards` entries and
        /// `costLimit / shards` cost, and eviction order is exact within each shard
        /// (close to, but not exactly, the global order). A value whose cost exceeds
        /// `costLimit / shards` is not stored. Keys never spread exactly evenly, so a
        /// sharded cache starts evicting in its fullest shard, down to that shard's
        /// low-water mark, before it holds `countLimit` entries in all (a 16-shard
        /// cache given exactly `countLimit` distinct keys holds noticeably fewer).
        /// Over time each shard cycles between its low-water mark and its limit, as
        /// one shard does.
        ///
        /// Give a cache that several threads read at once 16 or more shards: one
        /// shard is one lock that every reader takes in turn, while readers of
        /// different shards never wait for each other. On one thread the shard count
        /// makes no consistent difference. `Benchmarks/README.md` has the figures.
        public var shards: Int {
            get { chosenShards ?? Self.defaultShards(countLimit: countLimit, costLimit: costLimit) }
            set { chosenShards = newValue }
        }

        /// The shard count set explicitly, or `nil` for the default.
        private var chosenShards: Int?

        /// The shard count of a configuration that does not set one: 16 when the
        /// cache has a count limit of at least 65,536 entries (4,096 a shard) and no
        /// cost limit, 1 otherwise.
        ///
        /// One shard keeps the eviction order exact. With 16, threads reading
        /// different shards do not wait for each other, and the order differs from
        /// the global one only among entries about to be evicted. A cost limit keeps
        /// one shard: a shard holds `costLimit / shards`, and would refuse values the
        /// limit allows.
        public static func defaultShards(countLimit: Int?, costLimit: Int?) -> Int {
            guard costLimit == nil, let countLimit, countLimit >= 65_536 else { return 1 }
            return 16
        }

        /// How the cache gives memory back when the system signals memory pressure,
        /// or `nil` to ignore it. Defaults to ``MemoryPressureResponse/init(warningFraction:criticalFraction:source:)``
        /// with its defaults: on a warning the cache evicts down to half of what it
        /// holds, on critical pressure it empties, listening to
        /// ``SystemMemoryPressure``.
        public var memoryPressure: MemoryPressureResponse?

        /// The cost of a value. Defaults to `nil`: the value's ``CacheValue/cacheCost``
        /// when `Value` conforms to ``CacheValue`` (the byte count for `Data` and
        /// `String`), and 0 otherwise. Called outside the cache's locks (as the
        /// memory tier of a ``Cache``, outside that cache's locks too), so it may
        /// use the cache.
        ///
        /// A negative cost counts as 0, and a cost above 2^32 − 1 (4 GiB of bytes) as
        /// 2^32 − 1, so that no total of costs can overflow; a value whose cost
        /// exceeds the cost limit is not stored either way.
        public var cost: (@Sendable (Value) -> Int)?

        /// Creates a configuration; every parameter defaults as its property says
        /// (`shards: nil` is the default shard count).
        public init(
            countLimit: Int? = nil,
            costLimit: Int? = nil,
            lowWaterMark: Double = 0.75,
            policy: EvictionPolicy = .lru,
            defaultExpiry: Expiry = .never,
            shards: Int? = nil,
            cost: (@Sendable (Value) -> Int)? = nil,
            memoryPressure: MemoryPressureResponse? = MemoryPressureResponse()
        ) {
            self.countLimit = countLimit
            self.costLimit = costLimit
            self.lowWaterMark = lowWaterMark
            self.policy = policy
            self.defaultExpiry = defaultExpiry
            chosenShards = shards
            self.cost = cost
            self.memoryPressure = memoryPressure
        }

        /// Checks every setting and returns the shard count rounded up to a power of two.
        func validated() throws(HoardError) -> Int {
            if defaultExpiry._isNaN {
                throw HoardError(
                    .invalidConfiguration, "defaultExpiry must not give a NaN date (.after(.nan), .at(NaN))")
            }
            if let countLimit, countLimit < 1 {
                throw HoardError(.invalidConfiguration, "countLimit must be at least 1, not \(countLimit)")
            }
            if let costLimit, costLimit < 1 {
                throw HoardError(.invalidConfiguration, "costLimit must be at least 1, not \(costLimit)")
            }
            if costLimit != nil, cost == nil, _defaultCost(of: Value.self) == nil {
                throw HoardError(
                    .invalidConfiguration,
                    "costLimit needs a cost for \(Value.self): set the configuration's cost closure, "
                        + "or conform \(Value.self) to CacheValue")
            }
            guard lowWaterMark > 0, lowWaterMark <= 1 else {
                throw HoardError(
                    .invalidConfiguration, "lowWaterMark must be greater than 0 and at most 1, not \(lowWaterMark)")
            }
            if let memoryPressure {
                for (name, fraction) in [
                    ("warningFraction", memoryPressure.warningFraction),
                    ("criticalFraction", memoryPressure.criticalFraction),
                ] where !(0...1).contains(fraction) {
                    throw HoardError(
                        .invalidConfiguration, "memoryPressure.\(name) must be between 0 and 1, not \(fraction)")
                }
            }
            guard shards >= 1, shards <= 1024 else {
                throw HoardError(.invalidConfiguration, "shards must be between 1 and 1024, not \(shards)")
            }
            let shardCount = _FrequencySketch.powerOfTwo(atLeast: shards)
            if let countLimit, countLimit < shardCount {
                throw HoardError(
                    .invalidConfiguration,
                    "countLimit (\(countLimit)) must be at least the shard count (\(shardCount))")
            }
            if let costLimit, costLimit < shardCount {
                throw HoardError(
                    .invalidConfiguration,
                    "costLimit (\(costLimit)) must be at least the shard count (\(shardCount))")
            }
            return shardCount
        }
    }
}
