%% A workload of Erlang/OTP's JIT (BEAM), for tests/t_realprog.sh and bench/b_realprog.sh:
%% Erlang code (fib/1, on the Erlang process's own stack, which ends at BEAM's exit) and
%% built-in functions and garbage collection (C, on the scheduler thread's stack, under
%% the frame BEAM's JIT-generated process_main keeps: 16.5 KiB, realigned, mostly never
%% touched), for SECONDS of the emulator's CPU time (statistics(runtime)).
%%   erl -noshell +S 1:1 -pa DIR -s work main SECONDS
-module(work).
-export([main/1]).

fib(0) -> 0;
fib(1) -> 1;
fib(N) -> fib(N - 1) + fib(N - 2).

%% Each round: fib(16) in Erlang, then a list of 5000 built, reversed (lists_reverse_2, a BIF) and
%% measured (length/1, a BIF that traps), which also makes garbage to collect.
loop(End, Acc) ->
    {Runtime, _} = statistics(runtime),
    case Runtime >= End of
        true -> Acc;
        false ->
            List = lists:seq(1, 5000),
            loop(End, Acc + fib(16) + length(lists:reverse(List)))
    end.

main([Seconds]) ->
    Ms = round(list_to_float(atom_to_list(Seconds)) * 1000),
    {Runtime, _} = statistics(runtime),
    End = Runtime + Ms,
    io:format("~p~n", [loop(End, 0)]),
    init:stop().
