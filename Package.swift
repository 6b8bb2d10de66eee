// swift-tools-version: 6.2
import PackageDescription

/// Settings every Hoard target shares: Swift 6 language mode is the package default;
/// warnings fail the build of our own targets (never of dependencies).
let strict: [SwiftSetting] = [
    .treatAllWarnings(as: .error),
]

let package = Package(
    name: "Hoard",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "Hoard", targets: ["Hoard"]),
        .library(name: "HoardRedis", targets: ["HoardRedis"]),
        .executable(name: "hoard", targets: ["hoard"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
    ],
    targets: [
        .systemLibrary(
            name: "CSQLite",
            providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"])]
        ),
        .target(
            name: "Hoard",
            dependencies: [
                .target(name: "CSQLite", condition: .when(platforms: [.linux, .android, .windows])),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "HoardRedis",
            dependencies: [
                "Hoard",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "hoard",
            dependencies: [
                "Hoard",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict
        ),
        // Not a product: the child process the disk store's crash-safety and fault
        // tests start, kill and inspect. The test target depends on it (and on the
        // `hoard` tool, whose store commands it runs) so that both are built next to
        // the test bundle.
        .executableTarget(
            name: "HoardCrashWriter",
            dependencies: ["Hoard"],
            path: "Tests/Support/HoardCrashWriter",
            swiftSettings: strict
        ),
        .testTarget(
            name: "HoardTests",
            dependencies: ["Hoard", "HoardCrashWriter", "hoard"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "HoardRedisTests",
            dependencies: [
                "HoardRedis",
                "Hoard",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
    ],
    swiftLanguageModes: [.v6]
)
