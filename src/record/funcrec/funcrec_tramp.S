/*
 * The two pieces of the function recorder that run with the patched function's registers live
 * (funcrec.h): the entry path every function's trampoline jumps to, and the return trampoline
 * that the recorder puts in place of return addresses. Both save every general register a
 * caller may keep a value in across a call (rax, rcx, rdx, rsi, rdi, r8-r11: the arguments, the
 * vararg count in al, the static chain in r10; GCC's interprocedural register allocation may rely
 * on a known callee leaving more of them alone than the ABI says) and rbx, which they use to
 * realign the stack. Vector and x87 registers are never touched: the C side is built with
 * -mgeneral-regs-only.
 */
        .text

/* Entered by `push $number; jmp *common(%rip)` from a function's trampoline:
 *   [rsp] = the function's number in the plan, [rsp + 8] = the return address of its call.
 * fr_enter(number, &return slot) records the entry, may replace the return address, and
 * returns where to go on: the function's moved first instructions. */
        .globl  fr_entry_common
        .hidden fr_entry_common
        .type   fr_entry_common, @function
fr_entry_common:
        push    %rax
        push    %rcx
        push    %rdx
        push    %rsi
        push    %rdi
        push    %r8
        push    %r9
        push    %r10
        push    %r11
        push    %rbx
        mov     %rsp, %rbx
        mov     80(%rsp), %rdi
        lea     88(%rsp), %rsi
        and     $-16, %rsp
        call    fr_enter
        mov     %rbx, %rsp
        mov     %rax, 80(%rsp)
        pop     %rbx
        pop     %r11
        pop     %r10
        pop     %r9
        pop     %r8
        pop     %rdi
        pop     %rsi
        pop     %rdx
        pop     %rcx
        pop     %rax
        ret
        .size   fr_entry_common, . - fr_entry_common

/* Reached by the `ret` of a recorded function: rsp = its return slot + 8, rax/rdx (and xmm0/1,
 * st0) hold what it returned. fr_leave(rax, slot + 8) records the return and gives the real
 * return address, which goes into the slot for our own `ret`. */
        .globl  fr_return_tramp
        .hidden fr_return_tramp
        .type   fr_return_tramp, @function
fr_return_tramp:
        sub     $8, %rsp
        push    %rax
        push    %rcx
        push    %rdx
        push    %rsi
        push    %rdi
        push    %r8
        push    %r9
        push    %r10
        push    %r11
        push    %rbx
        mov     %rsp, %rbx
        mov     %rax, %rdi
        lea     88(%rsp), %rsi
        and     $-16, %rsp
        call    fr_leave
        mov     %rbx, %rsp
        mov     %rax, 80(%rsp)
        pop     %rbx
        pop     %r11
        pop     %r10
        pop     %r9
        pop     %r8
        pop     %rdi
        pop     %rsi
        pop     %rdx
        pop     %rcx
        pop     %rax
        ret
        .size   fr_return_tramp, . - fr_return_tramp

        .section .note.GNU-stack, "", @progbits
