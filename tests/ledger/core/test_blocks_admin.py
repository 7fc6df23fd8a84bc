"""Admin blocks (docs/formats.md §5.5, §5.8)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger.core.blocks.admin import AdminBlock
from ledger.core.blocks.admin_entries import (
    AuthorityEfficiency,
    AuthorityFactoidAddress,
    BitcoinAnchorKey,
    CoinbaseDescriptor,
    CoinbaseDescriptorCancel,
    DBSignature,
    FederatedServerSigningKey,
    MatryoshkaHash,
    MinuteNumber,
    OpaqueAdminEntry,
    ServerCountIncrease,
    ServerListChange,
)
from ledger.core.blocks.directory import DirectoryBlock
from ledger.core.errors import DecodeError
from ledger.core.keys import verify_signature
from tests.ledger.core.test_blocks_directory import GENESIS_RAW

Z = bytes(32)
GENESIS_LOOKUP = "4fb409d5369fad6aa7768dc620f11cd219f9b885956b631ad050962ca934052e"
GENESIS_BACKREF = "0a9aa1efbe7d0e8d9c1d460d1c78e3e7b50f984e65a3f3ee7b73100a94189dbf"

# factomd common/adminBlock/adminBlock_test.go TestUnmarshalABlock t1..t3: (raw, LookupHash, BackRef).
ABLOCK_1 = (
    (
        "000000000000000000000000000000000000000000000000000000000000000a0a9aa1efbe7d0e8d9c1d460d1c"
        "78e3e7b50f984e65a3f3ee7b73100a94189dbf0000000100000000020000008301000000000000000000000000"
        "00000000000000000000000000000000000000000426a802617848d4d16d87830fc521f4d136bb2d0c35285091"
        "9c2679f189613a83efbcbed19b5842e5aa06e66c41d8b61826d95d50c1cbc8bd5373f986c370547133462a9ffa"
        "0dcff025a6ad26747c95f1bdd88e2596fc8c6eaa8a2993c72c050002"
    ),
    "b30ab81a8afdbe0be1627ef151bf7e263ce3d39d60b61464d81daa8320c28a4f",
    "b2405450392038716e9b24804345f9ac0736792dba436c024268ed8100683894",
)
ABLOCK_70417 = (
    (
        "000000000000000000000000000000000000000000000000000000000000000a4a994fbc66747f91e28576e715"
        "de510bb12937ee68885ffc0a70ad3b03b375600001131100000000490000107706888888655866a003faabd999"
        "c7b0a7c908af17d63fd2ac2951dc99e1ad2a14f40001131208888888655866a003faabd999c7b0a7c908af17d6"
        "3fd2ac2951dc99e1ad2a14f400f8139f98fadc948b254d0dea29c55fab7fa14f1fd97ef78ef7bb99d2d82bd6f1"
        "0001131203888888655866a003faabd999c7b0a7c908af17d63fd2ac2951dc99e1ad2a14f486e2f9073dfafb46"
        "1888955166c12c6b1d9aa98504af1cccb08f0ad53fbbb66609888888655866a003faabd999c7b0a7c908af17d6"
        "3fd2ac2951dc99e1ad2a14f400005bf09c36ebb93643acf41e716261357583ee728106888888dda15d7ad44c32"
        "86d66cc4f82e6fc07ed88de4d13ac9a182199593cac10001131208888888dda15d7ad44c3286d66cc4f82e6fc0"
        "7ed88de4d13ac9a182199593cac10007f339e556ee999cc7e33500753ea0933381b09f5c2bca26e224d716e61a"
        "88620001131203888888dda15d7ad44c3286d66cc4f82e6fc07ed88de4d13ac9a182199593cac17c45e29fd0c7"
        "e09428e7ea60ed5042e8a0d6a091cc576e255eb10b7e899d3c0309888888dda15d7ad44c3286d66cc4f82e6fc0"
        "7ed88de4d13ac9a182199593cac100006788c85b7963c8527900a2a2ad2c24d15f347d89068888889585051d71"
        "17d217a55a366d56826eda35c951f02428b976524dbfc7f900011312088888889585051d7117d217a55a366d56"
        "826eda35c951f02428b976524dbfc7f9002001c69d076a5bf43335d41f49ad7626f1d79d8e1dfe9d9f9c8cc9a0"
        "d99efd5b00011312038888889585051d7117d217a55a366d56826eda35c951f02428b976524dbfc7f9914ab0fd"
        "1905f3ef19e54f94dd3caee1055793eb8cd5ce7f982cd15ea393bcd7098888889585051d7117d217a55a366d56"
        "826eda35c951f02428b976524dbfc7f90000c568a1206e29c7c8fed15aee12515833434b4eb406888888bf5e39"
        "211db27b2d2b1b57606b4d68cf57e908971949a233d8eb7341560001131208888888bf5e39211db27b2d2b1b57"
        "606b4d68cf57e908971949a233d8eb73415600646f6bf2eaa80a803f1ffd3286945c4d6ddfdf5974177a52141c"
        "6906153f52370001131203888888bf5e39211db27b2d2b1b57606b4d68cf57e908971949a233d8eb7341560027"
        "62ccf5948b8e1c29a9c3df4748cf3efe6567eb3046e6361f353079e5534409888888bf5e39211db27b2d2b1b57"
        "606b4d68cf57e908971949a233d8eb73415600007c6b5121835d148932c75ce773208ffc17a4144f068888886f"
        "f14cef50365b785eb3cefab5bc30175d022be06ed412391a8264537600011312088888886ff14cef50365b785e"
        "b3cefab5bc30175d022be06ed412391a82645376000d6a22b9bf17851c830189fb324ba7d1ea8d6a15eea3adf6"
        "71109825a133214700011312038888886ff14cef50365b785eb3cefab5bc30175d022be06ed412391a82645376"
        "fe21f1320ff7eaaab9ceb9551833078ab79b5b0dfe86097a88ca26d74e48b354098888886ff14cef50365b785e"
        "b3cefab5bc30175d022be06ed412391a826453760000b4db03e03da3555f630aef3900897e67247c8477068888"
        "88b1255ea1cc0b3ab3b9425d3239643ae1f3c00ec634690eda784f05bda70001131208888888b1255ea1cc0b3a"
        "b3b9425d3239643ae1f3c00ec634690eda784f05bda700e3b88b704533612f69b5d6390737481694d7d8acb71e"
        "532cac3e8dd2d11ca6910001131203888888b1255ea1cc0b3ab3b9425d3239643ae1f3c00ec634690eda784f05"
        "bda71cbf54effa547cf89751e3a02d8980ea7e9325e591ff8f1d360bbe323da8fa5a09888888b1255ea1cc0b3a"
        "b3b9425d3239643ae1f3c00ec634690eda784f05bda70000dcb4dcd7e5a518854eadd0ec48955101d9fbac3506"
        "88888841ac82c501a300def3e95d724b4b5e31f729f3b6d9d9736dca0f0edc34000113120888888841ac82c501"
        "a300def3e95d724b4b5e31f729f3b6d9d9736dca0f0edc3400667a53519cab0365d1a1ac625b6cd64d86695e8a"
        "e38d280ea6d3dbe8191acf34000113120388888841ac82c501a300def3e95d724b4b5e31f729f3b6d9d9736dca"
        "0f0edc3452103541ebcd32f5a55dc3c5037fd6396bbe3d65d22f8c06026a9ad97440d8cd0988888841ac82c501"
        "a300def3e95d724b4b5e31f729f3b6d9d9736dca0f0edc3400005ba2689c372fdf712e477a83059a5da313e07b"
        "f0068888882fa588e8ad6e73555a9b9ff3d84b468601b81328ec09d91051369d737300011312088888882fa588"
        "e8ad6e73555a9b9ff3d84b468601b81328ec09d91051369d737300296d08be4a741d6c328ab47d80a55590dcee"
        "f6550066a0a76e4816a3f51eefee00011312038888882fa588e8ad6e73555a9b9ff3d84b468601b81328ec09d9"
        "1051369d7373a5f91355b6c8a1a9b38d378434886caea05cc73e544416ec4c9b7f219f23c497098888882fa588"
        "e8ad6e73555a9b9ff3d84b468601b81328ec09d91051369d73730000850fd39e1841b29c12f4ace379380a4674"
        "89dba806888888b4eecb6868615e1875120e855529b4e372e2887cdec7185b46abfcfb350001131208888888b4"
        "eecb6868615e1875120e855529b4e372e2887cdec7185b46abfcfb3500c2bbab9d274415765eae5c3ee3b94ff3"
        "c38dd5c9b02c8f842e2770a6de0b50680001131203888888b4eecb6868615e1875120e855529b4e372e2887cde"
        "c7185b46abfcfb3586400145400bf22a717d1bd4fc7f15e5de2872d21e815bc0a4916c15de2e6eb709888888b4"
        "eecb6868615e1875120e855529b4e372e2887cdec7185b46abfcfb350000e0e135c1ee0c2131b2dac5fcb35386"
        "3ac21fff62068888884a0acbf1a23e3291b99681b80a91ca51914d64e39de65645868e0b471400011312088888"
        "884a0acbf1a23e3291b99681b80a91ca51914d64e39de65645868e0b47140093f6aca96b011fc31fd655fee955"
        "6b459509308eaaa63c02e9ebff8f384c72e000011312038888884a0acbf1a23e3291b99681b80a91ca51914d64"
        "e39de65645868e0b471435b100ead1d81fe3a3e6b1a656c127b14a2ef9d520adec6ea0d7b9d1d5488268098888"
        "884a0acbf1a23e3291b99681b80a91ca51914d64e39de65645868e0b4714000058e737d93cb52102d78ee7b918"
        "bd33a4412f901e06888888f05308313f6e8f5619cacfb32e0dcba25b4741de9c0fc3b127e8ba2a6b0001131208"
        "888888f05308313f6e8f5619cacfb32e0dcba25b4741de9c0fc3b127e8ba2a6b006ceeb261cc19b14f6c89bb0b"
        "d937f195ffc9e6adaa5618e432752b01a00792c70001131203888888f05308313f6e8f5619cacfb32e0dcba25b"
        "4741de9c0fc3b127e8ba2a6b8fcab189bbb2f97249d05b0b31adeaef23b7aaca326673e16fc901022f8285c809"
        "888888f05308313f6e8f5619cacfb32e0dcba25b4741de9c0fc3b127e8ba2a6b000057b3621913fd321c4c4f07"
        "cef3468bf04b0baf59068888881541fc5bc1bcc0597e71eed5df7de8d47c8eb97f867d16ebb20781f38b000113"
        "12088888881541fc5bc1bcc0597e71eed5df7de8d47c8eb97f867d16ebb20781f38b0034ffc2a7f6e35e503fd2"
        "d4259113d4d9b131e8e56d63a1c277ab5064d58d982600011312038888881541fc5bc1bcc0597e71eed5df7de8"
        "d47c8eb97f867d16ebb20781f38b1ce468172d6408643a8931838a935733f6fa97d02a8b44a741a1376da88291"
        "52098888881541fc5bc1bcc0597e71eed5df7de8d47c8eb97f867d16ebb20781f38b0000010c53bd5e4a863cf8"
        "e7df48f567e3f2e492aba906888888c1fd1cf7ca3e0c4e2e9a6462aa8ac4e537563ee54ff41eb6b617a1ec3700"
        "01131208888888c1fd1cf7ca3e0c4e2e9a6462aa8ac4e537563ee54ff41eb6b617a1ec3700b9a4837383cf11d8"
        "18f1c1931f5586f840967fe0931d9b733394f75bf39fcd170001131203888888c1fd1cf7ca3e0c4e2e9a6462aa"
        "8ac4e537563ee54ff41eb6b617a1ec3796fa0827f28ced76f18e42b8ef836d96c5c5adde4b8c98a406ad006109"
        "98562809888888c1fd1cf7ca3e0c4e2e9a6462aa8ac4e537563ee54ff41eb6b617a1ec3700001f605e0d687dbb"
        "731e6961cdf8c30e24195889d006888888b2ddad8c24fdf3033bdf6bd9c393ffe074b6f5d5741c84afea27c165"
        "6e0001131208888888b2ddad8c24fdf3033bdf6bd9c393ffe074b6f5d5741c84afea27c1656e00b11d2c22e96a"
        "f34946810c816ada60a7027ed3d7c98aac72283ed348fc58cf730001131203888888b2ddad8c24fdf3033bdf6b"
        "d9c393ffe074b6f5d5741c84afea27c1656e74055ead8eb83d34515c66bb7824dfda3659e1193dd31f6f38eed6"
        "e2cdc4e59209888888b2ddad8c24fdf3033bdf6bd9c393ffe074b6f5d5741c84afea27c1656e000072f4aa05ad"
        "c0b5284602bd744858106c618b932e06888888a8da713519881065d90f73f498b36d956e3390c5a6c067479223"
        "95075f0001131208888888a8da713519881065d90f73f498b36d956e3390c5a6c06747922395075f00ffb9efd4"
        "d490535e3b5041622354f5c440524b0d1976582e0c9ba6cb1649279b0001131203888888a8da713519881065d9"
        "0f73f498b36d956e3390c5a6c06747922395075f36108e2fd7ba67a25886c14408db1bc2a1d0098a23f2b64e47"
        "34ff80b772def009888888a8da713519881065d90f73f498b36d956e3390c5a6c06747922395075f00003d5ffe"
        "bea388ce494cd7d24ff03165117561ef9006888888a5ce32a3a257c1ff29033b6c01dd20239e7c68ebaf06d690"
        "e4ae2b7e830001131208888888a5ce32a3a257c1ff29033b6c01dd20239e7c68ebaf06d690e4ae2b7e830013d4"
        "2208f7a7699c7976dc19424872268e503779850fb72aecae4b5341dd40c70001131203888888a5ce32a3a257c1"
        "ff29033b6c01dd20239e7c68ebaf06d690e4ae2b7e83611fb3b711629ee6964f6e6d7a7a389ab275b4b14c8eaf"
        "aaa72930f2b9c1230309888888a5ce32a3a257c1ff29033b6c01dd20239e7c68ebaf06d690e4ae2b7e83000041"
        "2945af7b4ec2ff17285b22631be19f3201d572068888886043746fe47dcf55952b20d8aee6ae842024010fd3f4"
        "2bc0076a502f4200011312088888886043746fe47dcf55952b20d8aee6ae842024010fd3f42bc0076a502f4200"
        "847ef7a9d15df05940a97030a7b783fad54622bdb81f5698f948b94e127eb6e500011312038888886043746fe4"
        "7dcf55952b20d8aee6ae842024010fd3f42bc0076a502f42b566f30f2013dc3cf7960268da70efb76534ce710f"
        "270c1b3ae08781f9faae1b098888886043746fe47dcf55952b20d8aee6ae842024010fd3f42bc0076a502f4200"
        "00e2a977f66a529d3746727f390c429298f6daef680688888870cf06fb3ed94af3ba917dbe9fab73391915c578"
        "12bd6606e6ced76d53000113120888888870cf06fb3ed94af3ba917dbe9fab73391915c57812bd6606e6ced76d"
        "53005413e626ce80d90276b5b2388d13f4a4dce2faffce6bb76b9290fcd11dd700dc000113120388888870cf06"
        "fb3ed94af3ba917dbe9fab73391915c57812bd6606e6ced76d53151253cf6f9ad8db3f1bd7116a6ec894851fff"
        "4268ad1c14fe3ce8f3933a9b080988888870cf06fb3ed94af3ba917dbe9fab73391915c57812bd6606e6ced76d"
        "53000080b560002d85154fa1c255531c232f84b4293c8601000000000000000000000000000000000000000000"
        "00000000000000000000000426a802617848d4d16d87830fc521f4d136bb2d0c352850919c2679f189613a9c79"
        "8bf48022895c046a4e780fc43a4f112d90d79889a335ea88336e1cb01e47862bb4504a70cdd3055c9718b2b681"
        "66142229f66d772cccb2cac5e5b8dd6c09"
    ),
    "748a13e79aa35130ea193141ee7849b5cc7ffcceb1aa77d58cb62c129170ca79",
    "4f4ba20e4d8e62dd10827b20523f084ed3d5a90164bd06b95557109820ae0416",
)
ABLOCK_70419 = (
    (
        "000000000000000000000000000000000000000000000000000000000000000a9ac526b050fbebf858a8e755e2"
        "3655d3ccb53c256dac855304c74989de15d1810001131300000000290000095f05888888655866a003faabd999"
        "c7b0a7c908af17d63fd2ac2951dc99e1ad2a14f40001131408888888655866a003faabd999c7b0a7c908af17d6"
        "3fd2ac2951dc99e1ad2a14f400f8139f98fadc948b254d0dea29c55fab7fa14f1fd97ef78ef7bb99d2d82bd6f1"
        "0001131403888888655866a003faabd999c7b0a7c908af17d63fd2ac2951dc99e1ad2a14f486e2f9073dfafb46"
        "1888955166c12c6b1d9aa98504af1cccb08f0ad53fbbb66609888888655866a003faabd999c7b0a7c908af17d6"
        "3fd2ac2951dc99e1ad2a14f400005bf09c36ebb93643acf41e716261357583ee728105888888dda15d7ad44c32"
        "86d66cc4f82e6fc07ed88de4d13ac9a182199593cac10001131408888888dda15d7ad44c3286d66cc4f82e6fc0"
        "7ed88de4d13ac9a182199593cac10007f339e556ee999cc7e33500753ea0933381b09f5c2bca26e224d716e61a"
        "88620001131403888888dda15d7ad44c3286d66cc4f82e6fc07ed88de4d13ac9a182199593cac17c45e29fd0c7"
        "e09428e7ea60ed5042e8a0d6a091cc576e255eb10b7e899d3c0309888888dda15d7ad44c3286d66cc4f82e6fc0"
        "7ed88de4d13ac9a182199593cac100006788c85b7963c8527900a2a2ad2c24d15f347d89058888889585051d71"
        "17d217a55a366d56826eda35c951f02428b976524dbfc7f900011314088888889585051d7117d217a55a366d56"
        "826eda35c951f02428b976524dbfc7f9002001c69d076a5bf43335d41f49ad7626f1d79d8e1dfe9d9f9c8cc9a0"
        "d99efd5b00011314038888889585051d7117d217a55a366d56826eda35c951f02428b976524dbfc7f9914ab0fd"
        "1905f3ef19e54f94dd3caee1055793eb8cd5ce7f982cd15ea393bcd7098888889585051d7117d217a55a366d56"
        "826eda35c951f02428b976524dbfc7f90000c568a1206e29c7c8fed15aee12515833434b4eb405888888bf5e39"
        "211db27b2d2b1b57606b4d68cf57e908971949a233d8eb7341560001131408888888bf5e39211db27b2d2b1b57"
        "606b4d68cf57e908971949a233d8eb73415600646f6bf2eaa80a803f1ffd3286945c4d6ddfdf5974177a52141c"
        "6906153f52370001131403888888bf5e39211db27b2d2b1b57606b4d68cf57e908971949a233d8eb7341560027"
        "62ccf5948b8e1c29a9c3df4748cf3efe6567eb3046e6361f353079e5534409888888bf5e39211db27b2d2b1b57"
        "606b4d68cf57e908971949a233d8eb73415600007c6b5121835d148932c75ce773208ffc17a4144f058888886f"
        "f14cef50365b785eb3cefab5bc30175d022be06ed412391a8264537600011314088888886ff14cef50365b785e"
        "b3cefab5bc30175d022be06ed412391a82645376000d6a22b9bf17851c830189fb324ba7d1ea8d6a15eea3adf6"
        "71109825a133214700011314038888886ff14cef50365b785eb3cefab5bc30175d022be06ed412391a82645376"
        "fe21f1320ff7eaaab9ceb9551833078ab79b5b0dfe86097a88ca26d74e48b354098888886ff14cef50365b785e"
        "b3cefab5bc30175d022be06ed412391a826453760000b4db03e03da3555f630aef3900897e67247c8477058888"
        "88b1255ea1cc0b3ab3b9425d3239643ae1f3c00ec634690eda784f05bda70001131408888888b1255ea1cc0b3a"
        "b3b9425d3239643ae1f3c00ec634690eda784f05bda700e3b88b704533612f69b5d6390737481694d7d8acb71e"
        "532cac3e8dd2d11ca6910001131403888888b1255ea1cc0b3ab3b9425d3239643ae1f3c00ec634690eda784f05"
        "bda71cbf54effa547cf89751e3a02d8980ea7e9325e591ff8f1d360bbe323da8fa5a09888888b1255ea1cc0b3a"
        "b3b9425d3239643ae1f3c00ec634690eda784f05bda70000dcb4dcd7e5a518854eadd0ec48955101d9fbac3505"
        "88888841ac82c501a300def3e95d724b4b5e31f729f3b6d9d9736dca0f0edc34000113140888888841ac82c501"
        "a300def3e95d724b4b5e31f729f3b6d9d9736dca0f0edc3400667a53519cab0365d1a1ac625b6cd64d86695e8a"
        "e38d280ea6d3dbe8191acf34000113140388888841ac82c501a300def3e95d724b4b5e31f729f3b6d9d9736dca"
        "0f0edc3452103541ebcd32f5a55dc3c5037fd6396bbe3d65d22f8c06026a9ad97440d8cd0988888841ac82c501"
        "a300def3e95d724b4b5e31f729f3b6d9d9736dca0f0edc3400005ba2689c372fdf712e477a83059a5da313e07b"
        "f0058888882fa588e8ad6e73555a9b9ff3d84b468601b81328ec09d91051369d737300011314088888882fa588"
        "e8ad6e73555a9b9ff3d84b468601b81328ec09d91051369d737300296d08be4a741d6c328ab47d80a55590dcee"
        "f6550066a0a76e4816a3f51eefee00011314038888882fa588e8ad6e73555a9b9ff3d84b468601b81328ec09d9"
        "1051369d7373a5f91355b6c8a1a9b38d378434886caea05cc73e544416ec4c9b7f219f23c497098888882fa588"
        "e8ad6e73555a9b9ff3d84b468601b81328ec09d91051369d73730000850fd39e1841b29c12f4ace379380a4674"
        "89dba805888888b4eecb6868615e1875120e855529b4e372e2887cdec7185b46abfcfb350001131408888888b4"
        "eecb6868615e1875120e855529b4e372e2887cdec7185b46abfcfb3500c2bbab9d274415765eae5c3ee3b94ff3"
        "c38dd5c9b02c8f842e2770a6de0b50680001131403888888b4eecb6868615e1875120e855529b4e372e2887cde"
        "c7185b46abfcfb3586400145400bf22a717d1bd4fc7f15e5de2872d21e815bc0a4916c15de2e6eb709888888b4"
        "eecb6868615e1875120e855529b4e372e2887cdec7185b46abfcfb350000e0e135c1ee0c2131b2dac5fcb35386"
        "3ac21fff62058888884a0acbf1a23e3291b99681b80a91ca51914d64e39de65645868e0b471400011314088888"
        "884a0acbf1a23e3291b99681b80a91ca51914d64e39de65645868e0b47140093f6aca96b011fc31fd655fee955"
        "6b459509308eaaa63c02e9ebff8f384c72e000011314038888884a0acbf1a23e3291b99681b80a91ca51914d64"
        "e39de65645868e0b471435b100ead1d81fe3a3e6b1a656c127b14a2ef9d520adec6ea0d7b9d1d5488268098888"
        "884a0acbf1a23e3291b99681b80a91ca51914d64e39de65645868e0b4714000058e737d93cb52102d78ee7b918"
        "bd33a4412f901e0100000000000000000000000000000000000000000000000000000000000000000426a80261"
        "7848d4d16d87830fc521f4d136bb2d0c352850919c2679f189613ab50980c62e82c822a5801de348ebbc807251"
        "0654737f45420adf19a273cbc50657fe854181e0597a71ecce36ae3763c7f0bcfea270d441212a15ebf6f313e7"
        "07"
    ),
    "c4994ca612791460f4687d68cc351bdb183636d2f5300dbf3b8e58811171b39c",
    "336c9f4c143be396afb2fb112e18777da000883e576d2c9801c51a0f1d7cb7bf",
)
# factomd TestAdminBlockHash: height 5, no entries.
ABLOCK_5_RAW = (
    "000000000000000000000000000000000000000000000000000000000000000a8d665ee36947529e660101adf2d2a7"
    "d7ca0b045f7932e76f86409ae0ca9123b000000005000000000000000000"
)


def test_genesis_ablock_is_empty() -> None:
    block = AdminBlock.build(prev=None)
    assert block.lookup_hash().hex() == GENESIS_LOOKUP
    assert block.back_reference_hash().hex() == GENESIS_BACKREF
    assert AdminBlock.unmarshal(block.marshal()) == block


@pytest.mark.parametrize(("raw", "lookup", "backref"), [ABLOCK_1, ABLOCK_70417, ABLOCK_70419])
def test_factomd_ablock_vectors(raw: str, lookup: str, backref: str) -> None:
    block = AdminBlock.unmarshal(bytes.fromhex(raw))
    assert block.lookup_hash().hex() == lookup
    assert block.back_reference_hash().hex() == backref
    assert block.marshal().hex() == raw


def test_ablock_1_links_to_genesis_and_signs_the_genesis_dblock_header() -> None:
    block = AdminBlock.unmarshal(bytes.fromhex(ABLOCK_1[0]))
    assert block.height == 1
    assert block.prev_back_ref_hash.hex() == GENESIS_BACKREF
    assert block.entries[1] == MinuteNumber(2)
    (sig,) = block.db_signatures()
    assert sig.public_key.hex().startswith("0426a802") and sig.public_key.hex().endswith("613a")
    genesis_header = DirectoryBlock.unmarshal(bytes.fromhex(GENESIS_RAW)).header()
    assert verify_signature(sig.public_key, genesis_header, sig.signature)


def test_real_ablocks_decode_entry_kinds() -> None:
    b70417 = AdminBlock.unmarshal(bytes.fromhex(ABLOCK_70417[0]))
    b70419 = AdminBlock.unmarshal(bytes.fromhex(ABLOCK_70419[0]))
    assert (b70417.height, len(b70417.entries)) == (70417, 73)
    assert (b70419.height, len(b70419.entries)) == (70419, 41)
    assert {e.admin_id for e in b70417.entries} == {0x01, 0x03, 0x06, 0x08, 0x09}
    assert {e.admin_id for e in b70419.entries} == {0x01, 0x03, 0x05, 0x08, 0x09}
    first = b70419.entries[0]
    assert first == ServerListChange(
        0x05,
        bytes.fromhex("888888655866a003faabd999c7b0a7c908af17d63fd2ac2951dc99e1ad2a14f4"),
        70420,
    )
    anchor_keys = [e for e in b70419.entries if isinstance(e, BitcoinAnchorKey)]
    assert len(anchor_keys) == 10 and all(len(k.payload()) == 54 for k in anchor_keys)


def test_factomd_height_5_vector() -> None:
    block = AdminBlock.unmarshal(bytes.fromhex(ABLOCK_5_RAW))
    assert block.height == 5
    assert block.back_reference_hash().hex() == (
        "9515e5108c89ef004ff4fa01c6511f98c8c11f5c2976c4816f8bcfcc551a134d"
    )
    assert block.lookup_hash().hex() == (
        "f10eefb55197e34f2875c1727c816fcf6564a44902b716a380f0961406ff92d5"
    )
    body = block.to_json()
    assert body["backreferencehash"] == block.back_reference_hash().hex()
    assert body["lookuphash"] == block.lookup_hash().hex()


def test_build_links_back_reference() -> None:
    genesis = AdminBlock.build(prev=None)
    nxt = AdminBlock.build(prev=genesis, entries=(MinuteNumber(1),))
    assert nxt.height == 1
    assert nxt.prev_back_ref_hash == genesis.back_reference_hash()


def test_json_shape() -> None:
    block = AdminBlock.unmarshal(bytes.fromhex(ABLOCK_1[0]))
    body = block.to_json()
    assert body["header"] == {
        "prevbackrefhash": GENESIS_BACKREF,
        "dbheight": 1,
        "headerexpansionsize": 0,
        "headerexpansionarea": "",
        "messagecount": 2,
        "bodysize": 131,
        "adminchainid": "0" * 63 + "a",
        "chainid": "0" * 63 + "a",
    }
    assert body["abentries"][0] == {
        "adminidtype": 1,
        "identityadminchainid": "00" * 32,
        "prevdbsig": {
            "pub": block.entries[0].public_key.hex(),
            "sig": block.entries[0].signature.hex(),
        },
    }
    assert body["abentries"][1] == {"adminidtype": 0, "minutenumber": 2}
    assert body["lookuphash"] == ABLOCK_1[1]


def test_varint_sized_kinds_and_forward_compatible_entries_round_trip() -> None:
    entries = (
        CoinbaseDescriptor(((640000000, bytes([1]) * 32), (5, bytes([2]) * 32))),
        CoinbaseDescriptorCancel(140200, 3),
        AuthorityFactoidAddress(bytes([3]) * 32, bytes([4]) * 32),
        AuthorityEfficiency(bytes([5]) * 32, 10000),
        OpaqueAdminEntry(0x20, b"future"),
        ServerCountIncrease(1),
        MatryoshkaHash(0x02, bytes([6]) * 32, bytes([7]) * 32),
        FederatedServerSigningKey(bytes([8]) * 32, 0, bytes([9]) * 32, 77),
    )
    block = AdminBlock(9, bytes([1]) * 32, entries, header_expansion=b"\x01\x02")
    assert AdminBlock.unmarshal(block.marshal()) == block
    assert AuthorityFactoidAddress(Z, Z).payload()[:1] == b"\x40"  # varInt size 64
    assert AuthorityEfficiency(Z, 0).payload()[:1] == b"\x22"  # varInt size 34
    assert OpaqueAdminEntry(0x20, b"future").payload() == b"\x06future"
    body = block.to_json()
    assert body["header"]["headerexpansionarea"] == "AQI="
    assert body["abentries"][0]["outputs"][0]["amount"] == 640000000
    assert body["abentries"][4] == {"adminidtype": 0x20, "size": 6, "data": "ZnV0dXJl"}


def test_server_fault_and_bad_layouts_are_rejected() -> None:
    header = bytes(31) + b"\x0a" + Z + bytes(4) + b"\x00"
    fault = header + (1).to_bytes(4, "big") + (1).to_bytes(4, "big") + b"\x0a"
    with pytest.raises(DecodeError, match="server fault"):
        AdminBlock.unmarshal(fault)
    with pytest.raises(DecodeError):
        AdminBlock.unmarshal(bytes(31) + b"\x0b" + bytes(100))  # wrong chain ID
    raw = bytes.fromhex(ABLOCK_1[0])
    with pytest.raises(DecodeError):
        AdminBlock.unmarshal(raw + b"\x00")
    with pytest.raises(DecodeError):
        AdminBlock.unmarshal(raw[:-1])
    with pytest.raises(DecodeError):
        OpaqueAdminEntry(0x05, b"")
    with pytest.raises(DecodeError):
        AdminBlock(1, Z, ("not an entry",))  # type: ignore[arg-type]


def test_sized_entry_with_leftover_bytes_is_rejected() -> None:
    body = b"\x0e\x23" + bytes(32) + b"\x00\x01" + b"\xff"  # size 35 but the kind holds 34
    raw = bytes(31) + b"\x0a" + Z + bytes(4) + b"\x00"
    raw += (1).to_bytes(4, "big") + len(body).to_bytes(4, "big") + body
    with pytest.raises(DecodeError):
        AdminBlock.unmarshal(raw)


hashes = st.binary(min_size=32, max_size=32)
u32 = st.integers(0, 2**32 - 1)
admin_entries = st.one_of(
    st.builds(MinuteNumber, st.integers(0, 255)),
    st.builds(DBSignature, hashes, hashes, st.binary(min_size=64, max_size=64)),
    st.builds(MatryoshkaHash, st.sampled_from([2, 3]), hashes, hashes),
    st.builds(ServerCountIncrease, st.integers(0, 255)),
    st.builds(ServerListChange, st.sampled_from([5, 6, 7]), hashes, u32),
    st.builds(FederatedServerSigningKey, hashes, st.integers(0, 255), hashes, u32),
    st.builds(
        BitcoinAnchorKey,
        hashes,
        st.integers(0, 255),
        st.integers(0, 255),
        st.binary(min_size=20, max_size=20),
    ),
    st.builds(
        CoinbaseDescriptor,
        st.lists(st.tuples(st.integers(0, 2**64 - 1), hashes), max_size=3).map(tuple),
    ),
    st.builds(CoinbaseDescriptorCancel, u32, u32),
    st.builds(AuthorityFactoidAddress, hashes, hashes),
    st.builds(AuthorityEfficiency, hashes, st.integers(0, 2**16 - 1)),
    st.builds(OpaqueAdminEntry, st.integers(0x0F, 0xFF), st.binary(max_size=40)),
)
ablocks = st.builds(
    AdminBlock,
    u32,
    hashes,
    st.lists(admin_entries, max_size=6).map(tuple),
    st.binary(max_size=8),
)


@given(ablocks)
def test_round_trip(block: AdminBlock) -> None:
    assert AdminBlock.unmarshal(block.marshal()) == block
