// The component's entry: the WIT imports, and the hooks as the world's exports.
import * as host from 'wasmlet:plugin/host@0.1.2';
import * as podMeta from 'wasmlet:plugin/pod-meta@0.1.2';
import * as podAccess from 'wasmlet:plugin/pod-access@0.1.2';
import { hooksWorld } from 'wasmlet-plugin-sdk/hooks';
import { @TYPE@ } from './plugin.js';

export const { configure, selfCheck, admit, postStart, preStop } =
  hooksWorld(@TYPE@, { host, podMeta, podAccess });
