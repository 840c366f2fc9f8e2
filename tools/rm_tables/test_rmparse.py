#!/usr/bin/python3
"""Tests of the RM-table generator on header snippets written here (not NVIDIA's files).

Run: python3 -m unittest discover -s tools/rm_tables -p 'test_*.py'   (ctest runs it too)

Expected sizes and offsets of the snippet structures come from Python's ctypes, which lays out C
structures by the platform ABI on its own, not from the generator's compiler probe.
"""

import ctypes
import os
import re
import shutil
import sys
import tempfile
import textwrap
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_rm_tables  # noqa: E402
import rmemit  # noqa: E402
import rmparse  # noqa: E402
import rmprobe  # noqa: E402
import rmptrs  # noqa: E402
import rmrules  # noqa: E402


def dedent(s):
    return textwrap.dedent(s).lstrip("\n")


class StripComments(unittest.TestCase):
    def test_comment_openers_inside_strings_and_other_comments(self):
        text = 'a /* x // y */ b // c /* d\ne "/*" f \'"\' g /* 1\n2 */ h'
        self.assertEqual(rmparse.strip_comments(text), 'a  b \ne "/*" f \'"\' g \n h')


class StatusCodes(unittest.TestCase):
    def test_values_names_messages_and_trailing_comments(self):
        text = dedent('''
            NV_STATUS_CODE(NV_OK,                0x00000000, "Success")
            NV_STATUS_CODE(NV_ERR_GENERIC,       0x0000FFFF, "Failure: Generic Error")
            NV_STATUS_CODE(NV_ERR_QUOTE,         0x00000042, "say \\"hi\\"")  // comment
            ''')
        self.assertEqual(rmparse.parse_status_codes(text), [
            (0, "NV_OK", "Success"), (0xFFFF, "NV_ERR_GENERIC", "Failure: Generic Error"),
            (0x42, "NV_ERR_QUOTE", 'say \\"hi\\"')])


class Escapes(unittest.TestCase):
    def test_base_plus_offset_and_plain_numbers(self):
        numbers = dedent('''
            #define NV_IOCTL_MAGIC      'F'
            #define NV_IOCTL_BASE       200
            #define NV_ESC_CARD_INFO    (NV_IOCTL_BASE + 0)
            #define NV_ESC_REGISTER_FD  (NV_IOCTL_BASE + 1)   /* register */
            ''')
        found, env = rmparse.parse_escapes(numbers)
        self.assertEqual(found, [(200, "NV_ESC_CARD_INFO"), (201, "NV_ESC_REGISTER_FD")])
        numa, _ = rmparse.parse_escapes("#define NV_ESC_NUMA_INFO (NV_IOCTL_BASE + 15)\n", env)
        self.assertEqual(numa, [(215, "NV_ESC_NUMA_INFO")])
        rm, _ = rmparse.parse_escapes("#define NV_ESC_RM_CONTROL   0x2A\n#define X_Y 3\n")
        self.assertEqual(rm, [(0x2A, "NV_ESC_RM_CONTROL")])

    def test_unknown_names_are_not_guessed(self):
        found, _ = rmparse.parse_escapes("#define NV_ESC_X (UNKNOWN_BASE + 1)\n")
        self.assertEqual(found, [])

    def test_case_blocks_name_their_structures(self):
        source = dedent('''
            switch (cmd) {
                case NV_ESC_RM_ALLOC:
                {
                    NVOS21_PARAMETERS *pApi = data;
                    NVOS64_PARAMETERS *pApiAccess = data;
                    if ((dataSize != sizeof(*pApi)) && (dataSize != sizeof(*pApiAccess)))
                        goto done;
                    switch (pApi->hClass) { default: break; }
                    break;
                }
                case NV_ESC_CARD_INFO:
                {
                    size_t n = arg_size / sizeof(nv_ioctl_card_info_t);
                    break;
                }
                case NV_ESC_ATTACH_GPUS_TO_FD:
                {
                    size_t n = arg_size / sizeof(NvU32);
                    if (arg_size % sizeof(NvU32) != 0) break;
                    break;
                }
                case NV_ESC_RM_MAP_MEMORY:
                {
                    nv_ioctl_nvos33_parameters_with_fd *pApi = data;
                    NVOS33_PARAMETERS params;
                    if (dataSize != sizeof(*pApi)) break;
                    memset(&params, 0, sizeof(params));   /* a variable, not a type */
                    break;
                }
                case NV_ESC_STATUS_CODE:
                    /* sizeof(NOT_THIS) in a comment */
                    break;
                default:
                    break;
            }
            ''')
        got = rmparse.parse_escape_structs(source)
        self.assertEqual(got["NV_ESC_RM_ALLOC"], ["NVOS21_PARAMETERS", "NVOS64_PARAMETERS"])
        self.assertEqual(got["NV_ESC_CARD_INFO"], ["nv_ioctl_card_info_t[]"])
        self.assertEqual(got["NV_ESC_ATTACH_GPUS_TO_FD"], ["NvU32[]"])
        # `params` is kept by the parser; collect() drops names that are not types.
        self.assertEqual(got["NV_ESC_RM_MAP_MEMORY"][0], "nv_ioctl_nvos33_parameters_with_fd")
        self.assertNotIn("NV_ESC_STATUS_CODE", got)


class Controls(unittest.TestCase):
    def test_finn_marked_commands_and_their_parameter_structures(self):
        header = dedent('''
            #define NV2080_CTRL_CMD_GPU_GET_INFO_V2 (0x20800102U) /* finn: Evaluated from "(FINN_NV20_SUBDEVICE_0_GPU_INTERFACE_ID << 8) | NV2080_CTRL_GPU_GET_INFO_V2_PARAMS_MESSAGE_ID" */
            #define NV2080_CTRL_GPU_GET_INFO_V2_PARAMS_MESSAGE_ID (0x2U)
            #define NV2080_CTRL_CMD_INTERNAL_X      (0x20800a6a) /* finn: Evaluated from "((FINN_NV20_SUBDEVICE_0_INTERNAL_INTERFACE_ID << 8) | 0x6a)" */
            #define NV906F_CTRL_CMD_X_REASON_FAKE   (0x4) /* finn: Evaluated from "NV906F_CTRL_CMD_RESET_CHANNEL_REASON_ENUM_MAX + 1" */
            #define NV0000_CTRL_CMD_OLD_STYLE       (0x00000101) /* no finn comment */
            #define NV0000_CTRL_CMD_NVD_RPT_MAX     200
            ''')
        commands, plain = rmparse.parse_ctrl_header(header)
        self.assertEqual(commands, [
            (0x20800102, "NV2080_CTRL_CMD_GPU_GET_INFO_V2", "NV2080_CTRL_GPU_GET_INFO_V2_PARAMS"),
            (0x20800a6a, "NV2080_CTRL_CMD_INTERNAL_X", None)])
        self.assertIn((0x101, "NV0000_CTRL_CMD_OLD_STYLE"), plain)

    def test_nvoc_method_table_entries(self):
        nvoc = dedent('''
            {               /*  [0] */
            #if NVOC_EXPORTED_METHOD_DISABLED_BY_FLAG(0x102u)
                /*pFunc=*/      (void (*)(void)) NULL,
            #else
                /*pFunc=*/      (void (*)(void)) &subdeviceCtrlCmdGpuGetInfoV2_IMPL,
            #endif // NVOC_EXPORTED_METHOD_DISABLED_BY_FLAG(0x102u)
                /*flags=*/      0x102u,
                /*accessRight=*/0x0u,
                /*methodId=*/   0x20800102u,
                /*paramSize=*/  sizeof(NV2080_CTRL_GPU_GET_INFO_V2_PARAMS),
                /*pClassInfo=*/ &(__nvoc_class_def_Subdevice.classInfo),
            #if NV_PRINTF_STRINGS_ALLOWED
                /*func=*/       "subdeviceCtrlCmdGpuGetInfoV2"
            #endif
            },
            {               /*  [1] */
                /*flags=*/      0x9u,
                /*accessRight=*/0x0u,
                /*methodId=*/   0x20800145u,
                /*paramSize=*/  0 /* Singleton parameter list */,
                /*pClassInfo=*/ &(__nvoc_class_def_Subdevice.classInfo),
            #if NV_PRINTF_STRINGS_ALLOWED
                /*func=*/       "subdeviceCtrlCmdGpuAcquire"
            #endif
            },
            ''')
        self.assertEqual(rmparse.parse_nvoc_methods(nvoc), [
            (0x20800102, "NV2080_CTRL_GPU_GET_INFO_V2_PARAMS", "Subdevice",
             "subdeviceCtrlCmdGpuGetInfoV2"),
            (0x20800145, None, "Subdevice", "subdeviceCtrlCmdGpuAcquire")])

    def test_ctrl_doc_names(self):
        # The define of 0x20800a3e was dropped from ctrl2080internal.h after 515; its comment
        # block, naming the command, still precedes its parameter structure's message id.
        header = dedent('''
            /*!
             * NV2080_CTRL_CMD_INTERNAL_STATIC_KGR_GET_FECS_TRACE_DEFINES
             *
             * Get the FECS trace defines.
             */
            typedef struct NV2080_CTRL_INTERNAL_STATIC_GR_GET_FECS_TRACE_DEFINES {
                NvU32 fecsRecordSize;
            } NV2080_CTRL_INTERNAL_STATIC_GR_GET_FECS_TRACE_DEFINES;
            #define NV2080_CTRL_INTERNAL_STATIC_GR_GET_FECS_TRACE_DEFINES_PARAMS_MESSAGE_ID (0x3EU)
            typedef struct NV2080_CTRL_INTERNAL_STATIC_GR_GET_FECS_TRACE_DEFINES_PARAMS {
                NvU32 x;
            } NV2080_CTRL_INTERNAL_STATIC_GR_GET_FECS_TRACE_DEFINES_PARAMS;
            /* a block without a name line */
            #define NV2080_CTRL_GPU_OTHER_PARAMS_MESSAGE_ID (0x3FU)
            ''')
        self.assertEqual(rmparse.parse_ctrl_doc_names(header), {
            "NV2080_CTRL_INTERNAL_STATIC_GR_GET_FECS_TRACE_DEFINES_PARAMS":
                "NV2080_CTRL_CMD_INTERNAL_STATIC_KGR_GET_FECS_TRACE_DEFINES"})

    def test_derive_ctrl_name(self):
        self.assertEqual(
            rmparse.derive_ctrl_name(0x20800145, "subdeviceCtrlCmdGpuAcquireComputeModeReservation"),
            "NV2080_CTRL_CMD_GPU_ACQUIRE_COMPUTE_MODE_RESERVATION")
        self.assertEqual(rmparse.derive_ctrl_name(0x00800290,
                                                  "deviceCtrlCmdGpuVirtualizationSwitchToVga"),
                         "NV0080_CTRL_CMD_GPU_VIRTUALIZATION_SWITCH_TO_VGA")
        self.assertEqual(rmparse.derive_ctrl_name(0x20800102, "subdeviceCtrlCmdGpuGetInfoV2"),
                         "NV2080_CTRL_CMD_GPU_GET_INFO_V2")
        self.assertEqual(rmparse.derive_ctrl_name(0x1, "notAHandler"), None)
        self.assertEqual(rmparse.derive_ctrl_name(0x1, None), None)

    def test_interfaces(self):
        base = dedent('''
            #define NV2080_CTRL_GPU                           (0x01)
            #define NV2080_CTRL_GPU_LEGACY_NON_PRIVILEGED     (0x81) /* finn: Evaluated from "(NV2080_CTRL_GPU | NVxxxx_CTRL_LEGACY_NON_PRIVILEGED)" */
            #define NV2080_CTRL_CMD_NULL (0x20800000) /* finn: … */
            #define NV2080_CTRL_MAX_X (0x1234)
            ''')
        self.assertEqual(rmparse.parse_ctrl_categories(base, 0x2080), [
            (0x208001, "NV2080_CTRL_GPU"), (0x208081, "NV2080_CTRL_GPU_LEGACY_NON_PRIVILEGED")])
        finn = "#define FINN_NV2081_BINAPI_INTERFACE_ID (0x208101U)\n"
        self.assertEqual(rmparse.parse_finn_interfaces(finn), [(0x208101, "NV2081_BINAPI")])


class Classes(unittest.TestCase):
    def test_allclasses_primary_names_and_aliases(self):
        text = dedent('''
            #include <class/cl0000.h>               // NV01_ROOT
            #else
            #ifndef NV01_ROOT
            #define NV01_ROOT                                (0x00000000)
            #endif
            #ifndef NV1_ROOT
            #define NV1_ROOT                                 (0x00000000) // alias
            #endif
            #define HOPPER_CHANNEL_GPFIFO_A                  (0x0000c86f)
            ''')
        self.assertEqual(rmparse.parse_allclasses(text), [
            (0, "NV01_ROOT", False), (0, "NV1_ROOT", True), (0xc86f, "HOPPER_CHANNEL_GPFIFO_A",
                                                              False)])

    def test_class_header_class_name(self):
        text = dedent('''
            #define NVB069_NOTIFIERS_MAXCOUNT  (0x0000b069)
            #define  MAXWELL_FAULT_BUFFER_A    (0x0000B069)
            #define NVB069_PUT                 (0x0000b069)
            ''')
        self.assertEqual(rmparse.parse_class_header_class(text, 0xb069), "MAXWELL_FAULT_BUFFER_A")
        self.assertIsNone(rmparse.parse_class_header_class("#define X (0x1)\n", 0xb069))

    def test_resource_list(self):
        text = dedent('''
            RS_ENTRY(
                /* External Class         */ NV01_ROOT,
                /* Internal Class         */ RmClientResource,
                /* Multi-Instance         */ NV_FALSE,
                /* Parents                */ RS_ROOT_OBJECT,
                /* Alloc Param Info       */ RS_OPTIONAL(NvHandle),
                /* Flags                  */ RS_FLAGS_NONE
            )
            RS_ENTRY(
                /* External Class         */ HOPPER_CHANNEL_GPFIFO_A,
                /* Internal Class         */ KernelChannel,
                /* Parents                */ RS_LIST(classId(Device), classId(KernelChannelGroupApi)),
                /* Alloc Param Info       */ RS_REQUIRED(NV_CHANNEL_ALLOC_PARAMS),
            )
            RS_ENTRY(
                /* External Class         */ MPS_COMPUTE,
                /* Internal Class         */ MpsApi,
                /* Alloc Param Info       */ RS_NONE,
            )
            ''')
        self.assertEqual(rmparse.parse_resource_list(text), [
            ("NV01_ROOT", "RmClientResource", "NvHandle", False),
            ("HOPPER_CHANNEL_GPFIFO_A", "KernelChannel", "NV_CHANNEL_ALLOC_PARAMS", True),
            ("MPS_COMPUTE", "MpsApi", None, False)])


class Uvm(unittest.TestCase):
    def test_numbers(self):
        text = dedent('''
            #if defined(WIN32) || defined(WIN64)
            #   define UVM_IOCTL_BASE(i)       CTL_CODE(FILE_DEVICE_UNKNOWN, 0x800+i, METHOD_BUFFERED, 0)
            #else
            #   define UVM_IOCTL_BASE(i) i
            #endif
            #define UVM_RESERVE_VA                 UVM_IOCTL_BASE(1)
            #define UVM_MAP_EXTERNAL_ALLOCATION    UVM_IOCTL_BASE(33)
            #define UVM_INITIALIZE                 0x30000001
            #define UVM_MAX_GPUS                   32
            ''')
        self.assertEqual(rmparse.parse_uvm_ioctls(text), [
            (1, "UVM_RESERVE_VA"), (33, "UVM_MAP_EXTERNAL_ALLOCATION"),
            (0x30000001, "UVM_INITIALIZE")])


class Members(unittest.TestCase):
    HEADER = dedent('''
        typedef struct
        {
            NvHandle hRoot;                               // [IN] client handle
            NvV32    hClass;
            NvP64    pAllocParms NV_ALIGN_BYTES(8);       /* [IN] params */
            NV_DECLARE_ALIGNED(NvU64 length, 8);
            char     versionString[64];
            NvU32    a, b[4];
            union { NvU32 x; NvU64 y; } u;
            struct inner_tag { NvU16 z; } inner;
        #if defined(SOMETHING)
            NvU32    conditional;
        #endif
            NvU32    bits : 3;
            void   (*callback)(void);
            NvU8    *pointer;
        } NVOS_TEST_PARAMETERS;
        typedef NVOS_TEST_PARAMETERS NVOS_TEST_ALIAS;
        struct nv_ioctl_query { NvU32 status; };
        ''')

    def test_members_of_a_typedef_struct(self):
        body = rmparse.find_struct_body(self.HEADER, "NVOS_TEST_PARAMETERS")
        self.assertEqual(rmparse.parse_members(body), [
            ("hRoot", "NvHandle", False), ("hClass", "NvV32", False),
            ("pAllocParms", "NvP64", False), ("length", "NvU64", False),
            ("versionString", "char", True), ("a", "NvU32", False), ("b", "NvU32", True),
            ("u", "union", False), ("inner", "struct", False), ("conditional", "NvU32", False),
            ("pointer", "NvU8*", False)])

    def test_struct_tag_form_and_missing(self):
        self.assertEqual(rmparse.find_struct_body(self.HEADER, "nv_ioctl_query").strip(),
                         "NvU32 status;")
        self.assertIsNone(rmparse.find_struct_body(self.HEADER, "NOT_THERE"))

    def test_defined_types_leave_out_member_names(self):
        types = rmparse.defined_types(self.HEADER)
        self.assertIn("NVOS_TEST_PARAMETERS", types)
        self.assertIn("NVOS_TEST_ALIAS", types)
        self.assertIn("nv_ioctl_query", types)
        self.assertNotIn("u", types)
        self.assertNotIn("inner", types)


class PointerRules(unittest.TestCase):
    """The parsers of RM's embedded-pointer copy code (rmptrs.py) on snippets written here."""

    EMBEDDED = dedent('''
        static NvBool _xCopyIn(RMAPI_PARAM_COPY *paramCopies, RmCtrlParams *pRmCtrlParams)
        {
            NVX_TRANSACTION_PARAMS *pParams = (NVX_TRANSACTION_PARAMS*)pRmCtrlParams->pParams;
            switch (pParams->transType)
            {
                case NVX_TYPE_BLOCK:
                {
                    RMAPI_PARAM_COPY_INIT(paramCopies[0], pParams->data.block.pMessage,
                                    pParams->data.block.pMessage,
                                    pParams->data.block.messageLength, 1);
                    break;
                }
                default:
                    break;
            }
            return NV_TRUE;
        }
        NV_STATUS embeddedParamCopyIn(RMAPI_PARAM_COPY *paramCopies, RmCtrlParams *pRmCtrlParams)
        {
            switch (pRmCtrlParams->cmd)
            {
                case NVX_CTRL_CMD_GET_LIST:
                {
                    CHECK_PARAMS_OR_RETURN(pRmCtrlParams, NVX_GET_LIST_PARAMS);
                    RMAPI_PARAM_COPY_INIT(paramCopies[0],
                                    ((NVX_GET_LIST_PARAMS*)pParams)->list,
                                    ((NVX_GET_LIST_PARAMS*)pParams)->list,
                                    ((NVX_GET_LIST_PARAMS*)pParams)->listSize, sizeof(NVX_ITEM));
                    break;
                }
        #ifdef NOT_ON_LINUX
                case NVX_CTRL_CMD_HIDDEN:
                {
                    RMAPI_PARAM_COPY_INIT(paramCopies[0], ((NVX_H*)pParams)->p, ((NVX_H*)pParams)->p,
                                    1, sizeof(NVX_H));
                    break;
                }
        #endif
                case NVX_CTRL_CMD_SQUARE:
                {
                    NvU32 numEntries = 0;
                    if (((NVX_SQ_PARAMS*)pParams)->peers != NULL)
                        numEntries = ((NVX_SQ_PARAMS*)pParams)->gpuCount *
                                     ((NVX_SQ_PARAMS*)pParams)->gpuCount;
                    RMAPI_PARAM_COPY_INIT(paramCopies[0], ((NVX_SQ_PARAMS*)pParams)->peers,
                                    ((NVX_SQ_PARAMS*)pParams)->peers, numEntries, sizeof(NvU32));
                    numEntries = 0;
                    break;
                }
                case NVX_CTRL_CMD_FIXED:
                {
                    RMAPI_PARAM_COPY_INIT(paramCopies[0], ((NVX_F_PARAMS*)pParams)->pPde,
                                    ((NVX_F_PARAMS*)pParams)->pPde, 1, 0x10/*size*/);
                    break;
                }
                case NVX_CTRL_CMD_TRANSACTION:
                {
                    if (!_xCopyIn(paramCopies, pRmCtrlParams))
                        return status;
                    break;
                }
                default:
                    return status;
            }
            return NV_OK;
        }
        ''')

    def rule(self, cmd, struct, ptr, count, elem, cond=None):
        return {"cmd": cmd, "struct": struct, "ptr": ptr, "count": count, "elem": elem,
                "array": None, "cond": cond, "source": rmptrs.EMBEDDED}

    def test_ifdefs_drop_what_the_build_compiles_out(self):
        text = "a\n#ifdef X\nb\n#else\nc\n#endif\n#ifndef X\nd\n#endif\n#if FOO > 1\ne\n#endif\n"
        self.assertEqual(rmptrs.apply_ifdefs(text, set()).split(), ["a", "c", "d", "e"])
        self.assertEqual(rmptrs.apply_ifdefs(text, {"X"}).split(), ["a", "b", "e"])

    def test_embedded_param_copies(self):
        rules, skipped = rmptrs.parse_embedded_param_copy(self.EMBEDDED, defined=set())
        self.assertEqual(skipped, [])
        self.assertEqual(rules, [
            self.rule("NVX_CTRL_CMD_GET_LIST", "NVX_GET_LIST_PARAMS", "list", ["listSize"],
                      ("sizeof", "NVX_ITEM")),
            self.rule("NVX_CTRL_CMD_SQUARE", "NVX_SQ_PARAMS", "peers", ["gpuCount", "gpuCount"],
                      ("sizeof", "NvU32")),
            self.rule("NVX_CTRL_CMD_FIXED", "NVX_F_PARAMS", "pPde", [], ("num", 16)),
            self.rule("NVX_CTRL_CMD_TRANSACTION", "NVX_TRANSACTION_PARAMS",
                      "data.block.pMessage", ["data.block.messageLength"], ("num", 1),
                      ("transType", "NVX_TYPE_BLOCK"))])

    def test_a_case_the_build_keeps_is_read(self):
        rules, _ = rmptrs.parse_embedded_param_copy(self.EMBEDDED, defined={"NOT_ON_LINUX"})
        self.assertIn("NVX_CTRL_CMD_HIDDEN", [r["cmd"] for r in rules])

    def test_deprecated_converters(self):
        text = dedent('''
            static const RmDeprecatedControlEntry rmDeprecatedControlTable[] =
            {
                { NVX_CTRL_CMD_OLD,       V2_CONVERTER(_NVX_CTRL_CMD_OLD),     NV_FALSE },
                { NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION, V2_CONVERTER(_NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION) },
                { NVX_CTRL_CMD_MSA,       V2_CONVERTER(_NVX_CTRL_CMD_MSA) },
                { 0, NULL }
            };
            static NV_STATUS V2_CONVERTER(_NVX_CTRL_CMD_OLD)(API_SECURITY_INFO *pSecInfo);
            static NV_STATUS V2_CONVERTER(_NVX_CTRL_CMD_OLD)
            (
                API_SECURITY_INFO *pSecInfo
            )
            {
                CONVERT_TO_V2(NVX_CTRL_CMD_OLD_V2, NVX_OLD_PARAMS, NVX_OLD_V2_PARAMS, infoList,
                              infoList, infoListSize, NV_TRUE, NVX_INFO, NV_TRUE, NV_TRUE);
            }
            static NV_STATUS V2_CONVERTER(_NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION)
            (
                API_SECURITY_INFO *pSecInfo
            )
            {
                CTRL_PARAMS_TOKEN_INIT(token, NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_PARAMS, pArgs);
                rmapiParamsCopyOut(NULL, pParams2->versionBuffer, pParams->pVersionBuffer,
                                   versionBufferLen, NV_TRUE);
            }
            static NV_STATUS V2_CONVERTER(_NVX_CTRL_CMD_MSA)
            (
                API_SECURITY_INFO *pSecInfo
            )
            {
                NVX_MSA_PARAMS *pParams = NULL;
                NVX_MSA_V2_PARAMS *pParams2 = NULL;
                RmCopyUserForDeprecatedApi(RMAPI_DEPRECATED_COPYIN, RMAPI_DEPRECATED_BUFFER_EMPLACE,
                                           pArgs->params, sizeof(*pParams), (void**)&pParams, 1);
                RmCopyUserForDeprecatedApi(RMAPI_DEPRECATED_COPYIN, RMAPI_DEPRECATED_BUFFER_EMPLACE,
                                           pParams->pDebug, sizeof(pParams2->debugValues),
                                           (void**)&pParams2->debugValues, 1);
            }
            ''')
        rules, skipped = rmptrs.parse_deprecated_controls(text)
        self.assertEqual(skipped, [])
        got = [(r["cmd"], r["struct"], r["ptr"], r["count"], r["elem"]) for r in rules]
        self.assertEqual(got, [
            ("NVX_CTRL_CMD_OLD", "NVX_OLD_PARAMS", "infoList", ["infoListSize"],
             ("sizeof", "NVX_INFO")),
            ("NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION", "NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_PARAMS",
             "pVersionBuffer", ["sizeOfStrings"], ("num", 1)),
            ("NVX_CTRL_CMD_MSA", "NVX_MSA_PARAMS", "pDebug", [],
             ("member", "NVX_MSA_V2_PARAMS", "debugValues"))])

    def test_handler_copies_need_their_copy_in_the_release(self):
        files = {"src/nvidia/src/kernel/mem_mgr/mem_list.c":
                 "status = rmapiParamsCopyIn(NULL, pPteArray, pAllocParams->pageNumberList,\n"
                 "                           sizeof(NvU64) * pAllocParams->pageCount, b);\n"}
        rules, skipped = rmptrs.handler_copies(files.get)
        self.assertEqual([(r["struct"], r["ptr"]) for r in rules],
                         [("NV_MEMORY_LIST_ALLOCATION_PARAMS", "pageNumberList")])
        self.assertEqual(len(skipped), len(rmptrs.HANDLER_COPIES) - 1)

    # A helper of the shape of RmIdleChannels (written here): the copy sits under one value of a
    # bit field of `flags`, and the handler passes the members to it.
    IDLE = dedent('''
        switch (DRF_VAL(OS30, _FLAGS, _CHANNEL, flags))
        {
            case NVOS30_FLAGS_CHANNEL_SINGLE:
                phClients = &hClient;
                break;
            case NVOS30_FLAGS_CHANNEL_LIST:
                if (numChannels == 0) { return NV_OK; }
                RMAPI_PARAM_COPY_INIT(paramCopyClients, phClients, clients, numChannels,
                                      sizeof(NvU32));
                status = rmapiParamsAcquire(&paramCopyClients, bUser);
                RMAPI_PARAM_COPY_INIT(paramCopyDevices, phDevices, devices, numChannels,
                                      sizeof(NvU32));
                status = rmapiParamsAcquire(&paramCopyDevices, bUser);
                RMAPI_PARAM_COPY_INIT(paramCopyChannels, phChannels, channels, numChannels,
                                      sizeof(NvU32));
                status = rmapiParamsAcquire(&paramCopyChannels, bUser);
                break;
            default:
                return NV_ERR_INVALID_FLAGS;
        }
        ''')
    CLIENT = ("return RmIdleChannels(hClient, pParams->hDevice, pParams->hChannel, "
              "pParams->numChannels, pParams->phClients, pParams->phDevices, "
              "pParams->phChannels, pParams->flags, pParams->timeout, b);\n")

    def idle_rules(self, files):
        rules, _ = rmptrs.handler_copies(files.get)
        return [(r["ptr"], r["count"], r["elem"], r["cond"]) for r in rules
                if r["struct"] == "NV0000_CTRL_GPU_IDLE_CHANNELS_PARAMS"]

    def test_handler_copy_under_a_bit_field_condition(self):
        cond = ("flags", "NVOS30_FLAGS_CHANNEL_LIST", "NVOS30_FLAGS_CHANNEL")
        files = {rmptrs.IDLE_CHANNELS: self.IDLE, rmptrs.CLIENT_RESOURCE: self.CLIENT}
        self.assertEqual(self.idle_rules(files), [
            (m, ["numChannels"], ("sizeof", "NvU32"), cond)
            for m in ("phClients", "phDevices", "phChannels")])
        # The handler no longer passes the member: no rule.
        files[rmptrs.CLIENT_RESOURCE] = self.CLIENT.replace("pParams->phDevices", "NvP64_NULL")
        self.assertEqual([r[0] for r in self.idle_rules(files)], ["phClients", "phChannels"])
        # The copy moved under another value of the field, or is gone: no rule.
        files = {rmptrs.IDLE_CHANNELS: self.IDLE.replace("case NVOS30_FLAGS_CHANNEL_SINGLE:",
                                                         "case NVOS30_FLAGS_CHANNEL_OTHER:")
                 .replace("case NVOS30_FLAGS_CHANNEL_LIST:", "case NVOS30_FLAGS_CHANNEL_SINGLE:"),
                 rmptrs.CLIENT_RESOURCE: self.CLIENT}
        self.assertEqual(self.idle_rules(files), [])
        files[rmptrs.IDLE_CHANNELS] = re.sub(r"RMAPI_PARAM_COPY_INIT\(paramCopyChannels[^;]*;",
                                             "", self.IDLE)
        self.assertEqual([r[0] for r in self.idle_rules(files)], ["phClients", "phDevices"])

    def test_bit_field_condition_resolves_to_mask_and_shifted_value(self):
        r = self.rule(None, "S", "p", ["n"], ("sizeof", "NvU32"), ("flags", "V", "F"))
        value, mask = rmrules.cond_exprs(r["cond"])
        self.assertEqual((value, mask), ("((V)<<(0?F))",
                                         "((0xFFFFFFFFu>>(31-(1?F)+(0?F)))<<(0?F))"))
        self.assertNotIn(" ", value + mask)  # the probe's output is split on spaces
        self.assertEqual(rmrules.cond_exprs(("t", "X_TYPE")), ("X_TYPE", None))
        bound = [dict(r, kind=0, key=0x1, cmd=None)]
        sizes = {"S": 24, "NvU32": 4}
        offsets = {("S", "p"): (8, 8, 8), ("S", "n"): (0, 4, 4), ("S", "flags"): (16, 4, 4)}
        logged = []
        rows = rmrules.resolve(bound, sizes, offsets, {value: 0x20, mask: 0xf0}, logged.append)
        self.assertEqual([(x["cond_off"], x["cond_size"], x["cond_value"], x["cond_mask"])
                          for x in rows], [(16, 4, 0x20, 0xf0)])
        # A plain condition compares the whole member.
        plain = [dict(bound[0], cond=("flags", "V"))]
        rows = rmrules.resolve(plain, sizes, offsets, {"V": 3}, logged.append)
        self.assertEqual((rows[0]["cond_value"], rows[0]["cond_mask"]), (3, rmrules.ALL_BITS))
        # A value outside its mask is not a condition RM can meet: dropped, said.
        self.assertEqual(rmrules.resolve(bound, sizes, offsets, {value: 0x100, mask: 0xf0},
                                         logged.append), [])
        self.assertEqual(logged[-1].count("not measured"), 1)

    def test_compiled_out_copies_name_their_guard(self):
        got = rmptrs.compiled_out_copies(self.EMBEDDED, defined=set())
        self.assertEqual(got, {("NVX_H", "p"): "NOT_ON_LINUX"})
        self.assertEqual(rmptrs.compiled_out_copies(self.EMBEDDED, defined={"NOT_ON_LINUX"}), {})

    def test_not_copied_notes_and_reasons(self):
        note = rmptrs.NOT_COPIED_NOTES[0]
        self.assertEqual(rmptrs.not_copied_notes({}.get), {})
        self.assertEqual(rmptrs.not_copied_notes({note["file"]: "nothing here"}.get), {})
        paths = {"S": ["list", "pAddr", "pFn", "pOff"]}
        types = {("S", "list"): "NvP64", ("S", "pAddr"): "NvP64", ("S", "pFn"): "void *",
                 ("S", "pOff"): "NvP64"}
        rows = [{"struct": "S", "ptr": "list", "flags": 0}]
        got = rmrules.inventory(paths, rows, types, {("S", "pAddr"): "an address RM returns",
                                                     ("S", "pOff"): "compiled out"})
        self.assertEqual(got, [
            ("S", "list", rmrules.STATUS_FOLLOWED, ""),
            ("S", "pAddr", rmrules.STATUS_NOT_COPIED, "an address RM returns"),
            ("S", "pFn", rmrules.STATUS_NOT_COPIED,
             "a native pointer (`void *`), not an NvP64: a kernel address, no user copy"),
            ("S", "pOff", rmrules.STATUS_NOT_COPIED, "compiled out")])
        self.assertEqual(rmrules.inventory({"S": ["x"]}, [])[0][3], rmrules.NO_COPY_SITE)

    def test_pointer_members_through_nested_unions_and_arrays(self):
        texts = [dedent('''
            typedef struct OP { NvU64 gpuVA; NV_DECLARE_ALIGNED(NvP64 pCpuVA, 8); NvU32 size; } OP;
            typedef union DATA { struct { NvU32 n; NvP64 pMessage; } block; NvU8 raw[4]; } DATA;
            typedef struct P { NvU32 count; OP ops[4]; DATA data; void *pCallback; NvU64 plain; } P;
            ''')]
        bodies = gen_rm_tables.StructBodies(texts)
        self.assertEqual(rmptrs.pointer_members("P", bodies.members_of),
                         ["ops[].pCpuVA", "data.block.pMessage", "pCallback"])

    def test_bind_and_resolve(self):
        rules = [self.rule(None, "S", "list", ["n"], ("sizeof", "E")),
                 self.rule("CMD_B", "T", "p", [], ("num", 16)),
                 self.rule("CMD_UNKNOWN", "T", "p", [], ("num", 16))]
        rules[0]["cmd"] = None
        ctrl = [{"id": 0x2080aa01, "params": "S"}, {"id": 0x2080aa02, "params": "T"}]
        classes = [{"id": 0x3e, "params": "S"}]
        logged = []
        bound = rmrules.bind(rules, ctrl, classes, {"CMD_B": 0x2080aa02}, logged.append)
        self.assertEqual([(b["kind"], b["key"]) for b in bound],
                         [(0, 0x2080aa01), (1, 0x3e), (0, 0x2080aa02)])
        self.assertEqual(len(logged), 1)  # CMD_UNKNOWN
        sizes = {"S": 24, "T": 16, "E": 8}
        offsets = {("S", "list"): (8, 8, 8), ("S", "n"): (0, 4, 4), ("T", "p"): (8, 8, 8)}
        rows = rmrules.resolve(bound, sizes, offsets, {}, logged.append)
        self.assertEqual([(r["kind"], r["key"], r["ptr_off"], r["count_off"], r["elem_size"])
                          for r in rows],
                         [(0, 0x2080aa01, 8, [0, rmrules.NO_MEMBER], 8),
                          (0, 0x2080aa02, 8, [rmrules.NO_MEMBER] * 2, 16),
                          (1, 0x3e, 8, [0, rmrules.NO_MEMBER], 8)])
        del offsets[("S", "n")]  # not measurable: dropped, said
        n = len(logged)
        self.assertEqual(len(rmrules.resolve(bound, sizes, offsets, {}, logged.append)), 1)
        self.assertEqual(len(logged), n + 2)


class Probe(unittest.TestCase):
    """rmprobe on a header written here; expected layouts from ctypes."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="rmprobe-test.")
        with open(os.path.join(self.dir, "snippet.h"), "w") as f:
            f.write(dedent('''
                #include <stdint.h>
                typedef struct { uint32_t a; uint64_t b; uint8_t c[3]; } S1;
                typedef struct { uint16_t x; S1 inner; uint32_t tail; } S2;
                '''))

    def tearDown(self):
        shutil.rmtree(self.dir)

    def test_sizes_offsets_and_dropped_requests(self):
        class S1(ctypes.Structure):
            _fields_ = [("a", ctypes.c_uint32), ("b", ctypes.c_uint64), ("c", ctypes.c_uint8 * 3)]

        class S2(ctypes.Structure):
            _fields_ = [("x", ctypes.c_uint16), ("inner", S1), ("tail", ctypes.c_uint32)]

        sizes, fields, dropped = rmprobe.probe(
            ["snippet.h"], [self.dir], ["S1", "S2", "NO_SUCH_TYPE"],
            [("S1", "b", False), ("S1", "c", True), ("S2", "tail", False),
             ("S2", "no_such_member", False)])
        self.assertEqual(sizes, {"S1": ctypes.sizeof(S1), "S2": ctypes.sizeof(S2)})
        self.assertEqual(fields[("S1", "b")], (S1.b.offset, 8, 8))
        self.assertEqual(fields[("S1", "c")], (S1.c.offset, 3, 1))
        self.assertEqual(fields[("S2", "tail")], (S2.tail.offset, 4, 4))
        self.assertEqual(sorted(dropped), ["field ('S2', 'no_such_member')", "size NO_SUCH_TYPE"])

    def test_bit_field_condition_values_from_the_compiler(self):
        with open(os.path.join(self.dir, "drf.h"), "w") as f:
            f.write("#define X_FLAGS_CHANNEL 7:4\n#define X_FLAGS_CHANNEL_LIST (0x00000002)\n"
                    "#define X_FLAGS_ALL 31:0\n")
        exprs = [rmrules.cond_exprs(("flags", "X_FLAGS_CHANNEL_LIST", "X_FLAGS_CHANNEL")),
                 rmrules.cond_exprs(("flags", "X_FLAGS_CHANNEL_LIST", "X_FLAGS_ALL"))]
        _, _, dropped, values = rmprobe.probe(["drf.h"], [self.dir], [], [],
                                              values=sorted({e for p in exprs for e in p}))
        self.assertEqual(dropped, [])
        self.assertEqual([(values[v], values[m]) for v, m in exprs],
                         [(0x20, 0xf0), (0x2, 0xffffffff)])


class EndToEnd(unittest.TestCase):
    """A miniature release tree (every file collect() and measure() read) through the whole
    generator, down to the emitted .inc files."""

    FILES = {
        "kernel-open/common/inc/nvstatuscodes.h": '''
            NV_STATUS_CODE(NV_OK,               0x00000000, "Success")
            NV_STATUS_CODE(NV_ERR_INVALID_ARGUMENT, 0x0000001F, "Invalid argument to call")
            ''',
        "kernel-open/common/inc/nv-ioctl-numbers.h": '''
            #define NV_IOCTL_BASE       200
            #define NV_ESC_CARD_INFO    (NV_IOCTL_BASE + 0)
            #define NV_ESC_CHECK_VERSION_STR (NV_IOCTL_BASE + 10)
            ''',
        "src/nvidia/arch/nvalloc/unix/include/nv_escape.h": '''
            #define NV_ESC_RM_CONTROL   0x2A
            ''',
        "src/nvidia/arch/nvalloc/unix/include/nv-ioctl.h": '''
            #pragma once
            #include "nvtypes.h"
            typedef struct nv_ioctl_card_info { NvU8 valid; NvU64 fb_size NV_ALIGN_BYTES(8); } nv_ioctl_card_info_t;
            typedef struct nv_ioctl_rm_api_version { NvU32 cmd; NvU32 reply; char versionString[64]; } nv_ioctl_rm_api_version_t;
            ''',
        "kernel-open/nvidia/nv.c": '''
            switch (cmd) {
                case NV_ESC_CARD_INFO: { n = arg_size / sizeof(nv_ioctl_card_info_t); break; }
                default: break;
            }
            ''',
        "src/nvidia/arch/nvalloc/unix/src/escape.c": '''
            switch (cmd) {
                case NV_ESC_RM_CONTROL: { NVOS54_PARAMETERS *pApi = data;
                    if (dataSize != sizeof(*pApi)) goto done; break; }
            }
            ''',
        "src/common/sdk/nvidia/inc/nvtypes.h": '''
            #pragma once
            #include <stdint.h>
            typedef uint8_t NvU8; typedef uint16_t NvU16; typedef uint32_t NvU32;
            typedef uint64_t NvU64; typedef NvU32 NvHandle; typedef NvU32 NvV32;
            typedef NvU64 NvP64;
            #define NV_ALIGN_BYTES(n) __attribute__((aligned(n)))
            ''',
        "src/common/sdk/nvidia/inc/nvos.h": '''
            #pragma once
            #include "nvtypes.h"
            typedef struct { NvHandle hClient; NvHandle hObject; NvV32 cmd; NvU32 flags;
                             NvP64 params NV_ALIGN_BYTES(8); NvU32 paramsSize; NvV32 status; }
                NVOS54_PARAMETERS;
            ''',
        "src/common/sdk/nvidia/inc/ctrl/ctrl2080/ctrl2080base.h": '''
            #define NV2080_CTRL_GPU                           (0x01)
            ''',
        "src/common/sdk/nvidia/inc/ctrl/ctrl2080/ctrl2080gpu.h": '''
            #include "nvtypes.h"
            #define NV2080_CTRL_CMD_GPU_GET_THING (0x20800107U) /* finn: Evaluated from "(FINN_NV20_SUBDEVICE_0_GPU_INTERFACE_ID << 8) | NV2080_CTRL_GPU_GET_THING_PARAMS_MESSAGE_ID" */
            #define NV2080_CTRL_GPU_GET_THING_PARAMS_MESSAGE_ID (0x7U)
            typedef struct NV2080_CTRL_GPU_GET_THING_PARAMS { NvU32 count; NvU64 list[5]; } NV2080_CTRL_GPU_GET_THING_PARAMS;
            #define NV2080_CTRL_CMD_GPU_GET_ITEMS (0x20800108U) /* finn: Evaluated from "(FINN_NV20_SUBDEVICE_0_GPU_INTERFACE_ID << 8) | NV2080_CTRL_GPU_GET_ITEMS_PARAMS_MESSAGE_ID" */
            #define NV2080_CTRL_GPU_GET_ITEMS_PARAMS_MESSAGE_ID (0x8U)
            typedef struct NV2080_CTRL_GPU_ITEM { NvU32 a; NvU32 b; NvU32 c; } NV2080_CTRL_GPU_ITEM;
            typedef struct NV2080_CTRL_GPU_GET_ITEMS_PARAMS { NvU32 itemCount; NvP64 items NV_ALIGN_BYTES(8); NvP64 cookie NV_ALIGN_BYTES(8); } NV2080_CTRL_GPU_GET_ITEMS_PARAMS;
            ''',
        "src/nvidia/src/kernel/rmapi/embedded_param_copy.c": '''
            NV_STATUS embeddedParamCopyIn(RMAPI_PARAM_COPY *paramCopies, RmCtrlParams *pRmCtrlParams)
            {
                switch (pRmCtrlParams->cmd)
                {
                    case NV2080_CTRL_CMD_GPU_GET_ITEMS:
                    {
                        RMAPI_PARAM_COPY_INIT(paramCopies[0],
                            ((NV2080_CTRL_GPU_GET_ITEMS_PARAMS*)pParams)->items,
                            ((NV2080_CTRL_GPU_GET_ITEMS_PARAMS*)pParams)->items,
                            ((NV2080_CTRL_GPU_GET_ITEMS_PARAMS*)pParams)->itemCount,
                            sizeof(NV2080_CTRL_GPU_ITEM));
                        break;
                    }
                }
            }
            ''',
        "src/common/sdk/nvidia/inc/class/cl2080.h": '''
            #define NV20_SUBDEVICE_0 (0x2080U) /* finn: Evaluated from "NV2080_ALLOC_PARAMETERS_MESSAGE_ID" */
            typedef struct NV2080_ALLOC_PARAMETERS { NvU32 subDeviceId; } NV2080_ALLOC_PARAMETERS;
            ''',
        "src/nvidia/generated/g_allclasses.h": '''
            #define NV20_SUBDEVICE_0                         (0x00002080)
            ''',
        "src/nvidia/generated/g_subdevice_nvoc.c": '''
                /*methodId=*/   0x20800107u,
                /*paramSize=*/  sizeof(NV2080_CTRL_GPU_GET_THING_PARAMS),
                /*pClassInfo=*/ &(__nvoc_class_def_Subdevice.classInfo),
                /*methodId=*/   0x20800145u,
                /*paramSize=*/  0,
                /*pClassInfo=*/ &(__nvoc_class_def_Subdevice.classInfo),
            #if NV_PRINTF_STRINGS_ALLOWED
                /*func=*/       "subdeviceCtrlCmdUnpublished"
            #endif
            ''',
        "src/nvidia/src/kernel/rmapi/resource_list.h": '''
            RS_ENTRY(
                /* External Class         */ NV20_SUBDEVICE_0,
                /* Internal Class         */ Subdevice,
                /* Alloc Param Info       */ RS_OPTIONAL(NV2080_ALLOC_PARAMETERS),
            )
            ''',
        "kernel-open/nvidia-uvm/uvm_linux_ioctl.h": '''
            #pragma once
            #include "nvtypes.h"
            #define UVM_INITIALIZE 0x30000001
            typedef struct { NvU64 flags NV_ALIGN_BYTES(8); NvU32 rmStatus; } UVM_INITIALIZE_PARAMS;
            ''',
        "kernel-open/nvidia-uvm/uvm_ioctl.h": '''
            #pragma once
            #include "uvm_linux_ioctl.h"
            #define UVM_IOCTL_BASE(i) i
            #define UVM_FREE UVM_IOCTL_BASE(34)
            typedef struct { NvU64 base NV_ALIGN_BYTES(8); NvU64 length NV_ALIGN_BYTES(8); NvU32 rmStatus; } UVM_FREE_PARAMS;
            ''',
    }

    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="rmtables-tree.")
        self.out = tempfile.mkdtemp(prefix="rmtables-out.")
        for rel, text in self.FILES.items():
            path = os.path.join(self.root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(dedent(text))

    def tearDown(self):
        shutil.rmtree(self.root)
        shutil.rmtree(self.out)

    def read(self, kind):
        with open(os.path.join(self.out, "r999", kind + ".inc")) as f:
            text = f.read()
        self.assertTrue(text.startswith("// generated by tools/rm_tables/gen_rm_tables.py from "
                                        "NVIDIA/open-gpu-kernel-modules 999.1 (abc); do not edit"))
        return [l for l in text.splitlines() if not l.startswith("//")]

    def test_whole_generator(self):
        class Card(ctypes.Structure):
            _fields_ = [("valid", ctypes.c_uint8), ("fb_size", ctypes.c_uint64)]

        class Thing(ctypes.Structure):
            _fields_ = [("count", ctypes.c_uint32), ("list", ctypes.c_uint64 * 5)]

        class Version(ctypes.Structure):
            _fields_ = [("cmd", ctypes.c_uint32), ("reply", ctypes.c_uint32),
                        ("versionString", ctypes.c_char * 64)]

        class Init(ctypes.Structure):
            _fields_ = [("flags", ctypes.c_uint64), ("rmStatus", ctypes.c_uint32)]

        class Free(ctypes.Structure):
            _fields_ = [("base", ctypes.c_uint64), ("length", ctypes.c_uint64),
                        ("rmStatus", ctypes.c_uint32)]

        class Item(ctypes.Structure):
            _fields_ = [("a", ctypes.c_uint32), ("b", ctypes.c_uint32), ("c", ctypes.c_uint32)]

        class Items(ctypes.Structure):
            _fields_ = [("itemCount", ctypes.c_uint32), ("items", ctypes.c_uint64),
                        ("cookie", ctypes.c_uint64)]

        tables = gen_rm_tables.build_tables(gen_rm_tables.Tree(self.root), "999.1", "abc",
                                            lambda msg: None)
        counts = rmemit.emit_branch(os.path.join(self.out, "r999"), "r999", tables)
        rmemit.emit_index(self.out, None)
        self.assertEqual(counts["status"], 2)
        self.assertEqual(self.read("status")[1],
                         '{0x0000001f, "NV_ERR_INVALID_ARGUMENT", "Invalid argument to call"},')
        escapes = self.read("escapes")
        self.assertEqual(escapes[0], '{0x2a, "NV_ESC_RM_CONTROL", EscapeGroup::kRm, '
                                     '"NVOS54_PARAMETERS", 32, "", 0, false},')
        self.assertEqual(escapes[1], '{0xc8, "NV_ESC_CARD_INFO", EscapeGroup::kFrontend, '
                                     '"nv_ioctl_card_info_t", %d, "", 0, true},' %
                         ctypes.sizeof(Card))
        self.assertIn('"NV_ESC_CHECK_VERSION_STR", EscapeGroup::kFrontend, '
                      '"nv_ioctl_rm_api_version_t", %d,' % ctypes.sizeof(Version),
                      escapes[2])  # the hint, measured
        ctrl = self.read("ctrl")
        self.assertEqual(ctrl, [
            '{0x20800107, "NV2080_CTRL_CMD_GPU_GET_THING", "NV2080_CTRL_GPU_GET_THING_PARAMS", '
            '%d, 3, ""},' % ctypes.sizeof(Thing),
            '{0x20800108, "NV2080_CTRL_CMD_GPU_GET_ITEMS", "NV2080_CTRL_GPU_GET_ITEMS_PARAMS", '
            '%d, 2, ""},' % ctypes.sizeof(Items),  # its structure from RM's copy code
            '{0x20800145, "NV2080_CTRL_CMD_UNPUBLISHED", "", 0, 13, "subdeviceCtrlCmdUnpublished"},'])
        # The pointer rule of the embedded-pointer copy, measured, and the inventory.
        self.assertEqual(self.read("pointers"), [
            '{0, 0x20800108, "NV2080_CTRL_GPU_GET_ITEMS_PARAMS", "items", "params.items", %d, %d, '
            '%d, 0xffffffff, 4, %d, "NV2080_CTRL_GPU_ITEM", 0xffffffff, 0, 0, 0xffffffff, 0, '
            '0xffffffff, 0, 0, 0xffffffff, 0, "itemCount", "", '
            '"src/nvidia/src/kernel/rmapi/embedded_param_copy.c"},' % (
                ctypes.sizeof(Items), Items.items.offset, Items.itemCount.offset,
                ctypes.sizeof(Item))])
        self.assertEqual(self.read("pointer_members"), [
            '{"NV2080_CTRL_GPU_GET_ITEMS_PARAMS", "items", 0, ""},',
            '{"NV2080_CTRL_GPU_GET_ITEMS_PARAMS", "cookie", 2, "%s"},' % rmrules.NO_COPY_SITE])
        self.assertEqual(self.read("categories"), ['{0x208001, "NV2080_CTRL_GPU"},'])
        self.assertEqual(self.read("classes"), [
            '{0x00002080, "NV20_SUBDEVICE_0", "Subdevice", "NV2080_ALLOC_PARAMETERS", 4, false, '
            'true},'])
        self.assertEqual(self.read("uvm"), [
            '{0x00000022, "UVM_FREE", "UVM_FREE_PARAMS", %d, %d},' % (ctypes.sizeof(Free),
                                                                      Free.rmStatus.offset),
            '{0x30000001, "UVM_INITIALIZE", "UVM_INITIALIZE_PARAMS", %d, %d},' % (
                ctypes.sizeof(Init), Init.rmStatus.offset)])
        structs = self.read("structs")
        names = [re.match(r'\{"(\w+)"', l).group(1) for l in structs]
        self.assertEqual(names, sorted(names))
        fields = self.read("fields")
        card = next(l for l in structs if l.startswith('{"nv_ioctl_card_info_t"'))
        first, count = map(int, re.search(r", (\d+), (\d+)\},$", card).groups())
        self.assertEqual(fields[first:first + count], [
            '{"valid", "NvU8", 0, 1, 1},',
            '{"fb_size", "NvU64", %d, 8, 8},' % Card.fb_size.offset])
        with open(os.path.join(self.out, "branches.inc")) as f:
            index = f.read()
        self.assertIn('#include "rm/generated/r999/ctrl.inc"', index)
        self.assertIn("  X(r999) \\", index)
        self.check_uvm_sizes_header(ctypes.sizeof(Init), ctypes.sizeof(Free))
        self.check_rm_params_header(ctypes.sizeof(Items), Items.items.offset, ctypes.sizeof(Item))

    def check_rm_params_header(self, items_size, items_off, item_size):
        """rm_params.h compiles as C and holds the class sizes and the rule, for the recorders."""
        src = os.path.join(self.out, "probe_rm.c")
        with open(src, "w") as f:
            f.write('#include <stdio.h>\n#include "rm_params.h"\nint main(void) {\n'
                    '  const struct nvtr_rm_branch* b = &nvtr_rm_branches[0];\n'
                    '  printf("%d %s %u %u\\n", b->major, b->release, b->nclasses, b->nrules);\n'
                    '  for (unsigned i = 0; i < b->nclasses; ++i)\n'
                    '    printf("c %x %u\\n", b->classes[i].hclass, b->classes[i].size);\n'
                    '  for (unsigned i = 0; i < b->nrules; ++i) {\n'
                    '    const struct nvtr_ptr_rule* r = &b->rules[i];\n'
                    '    printf("r %u %x %u %u %u %u %u %s\\n", r->kind, r->key, r->params_size,\n'
                    '           r->ptr, r->count, r->count_size, r->elem, r->role);\n'
                    '  }\n  return 0;\n}\n')
        exe = os.path.join(self.out, "probe_rm")
        import subprocess
        subprocess.run(["gcc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-I", self.out, src,
                        "-o", exe], check=True)
        lines = subprocess.run([exe], capture_output=True, text=True, check=True).stdout
        self.assertEqual(lines.splitlines(), [
            "999 999.1 1 1", "c 2080 4",
            "r 0 20800108 %d %d 0 4 %d params.items" % (items_size, items_off, item_size)])

    def check_uvm_sizes_header(self, init_size, free_size):
        """uvm_sizes.h compiles as C and holds the measured sizes, for the recorders."""
        src = os.path.join(self.out, "probe.c")
        with open(src, "w") as f:
            f.write('#include <stdio.h>\n#include "uvm_sizes.h"\nint main(void) {\n'
                    '  for (int b = 0; b < NVTR_UVM_BRANCH_COUNT; ++b) {\n'
                    '    const struct nvtr_uvm_branch* x = &nvtr_uvm_branches[b];\n'
                    '    for (unsigned i = 0; i < x->count; ++i)\n'
                    '      printf("%d %s %x %u\\n", x->major, x->release, x->sizes[i].request,\n'
                    '             x->sizes[i].size);\n'
                    '  }\n  return 0;\n}\n')
        exe = os.path.join(self.out, "probe")
        import subprocess
        subprocess.run(["gcc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-I", self.out, src,
                        "-o", exe], check=True)
        lines = subprocess.run([exe], capture_output=True, text=True, check=True).stdout
        self.assertEqual(lines.splitlines(), ["999 999.1 22 %d" % free_size,
                                              "999 999.1 30000001 %d" % init_size])


if __name__ == "__main__":
    unittest.main()
